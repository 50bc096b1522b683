"""Start the web server and one Celery worker together; Ctrl-C stops both.

`make run` calls this after migrating, syncing content and creating the demo accounts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = os.environ.get("HOST", "127.0.0.1")
PORT = os.environ.get("PORT", "8000")


def start(args: list[str], cores: set[int] | None = None) -> subprocess.Popen[bytes]:
    # Each child leads its own process group so that one signal reaches all of its children.
    def pin() -> None:
        if cores:
            os.sched_setaffinity(0, cores)

    return subprocess.Popen(args, cwd=ROOT, start_new_session=True, preexec_fn=pin)


def web_cores() -> set[int] | None:
    """Keep the web server off the worker's timing core: a request served there preempts the
    call being timed, and the grade's figures come out noisier and the grading slower. The
    one worker started here grades one submission at a time, on its slot (GRADERS_SLOT, else
    the first free one: 0)."""
    from graders.sandbox.launch import cores_apart_from_timing

    return cores_apart_from_timing([int(os.environ.get("GRADERS_SLOT") or 0)])


def web_command(python: str, host: str, port: str) -> list[str]:
    """Django's own server, one process answering each request on a thread of its own.
    bench/load.py --embedded starts the same command line."""
    return [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"]


def worker_command(python: str, queue: str, var: Path, *, beat: bool = True) -> list[str]:
    """One worker, one grading at a time, with the beat scheduler inside it (one process fewer
    on a laptop). bench/load.py --embedded starts the same command line."""
    return [
        python,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "-Q",
        f"{queue},lti",  # and the LMS grade passback's queue (courseware/lti)
        "--concurrency",
        "1",
        *(["--beat", "--schedule", str(var / "celerybeat-schedule")] if beat else []),
        "--loglevel",
        "INFO",
        "--hostname",
        f"{queue}@%h",
    ]


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    # SIGTERM to each leader only: Celery's main process then stops its own pool cleanly.
    for proc in processes:
        if proc.poll() is None:
            proc.terminate()
    deadline = time.monotonic() + 20
    for proc in processes:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    queue = os.environ.get("GRADING_DEVICE_KIND", "cpu")
    var = ROOT / "var"
    var.mkdir(exist_ok=True)
    python = sys.executable
    web = start(web_command(python, HOST, PORT), web_cores())
    worker = start(worker_command(python, queue, var))
    processes = [web, worker]
    print(
        f"\n  The site is at http://{HOST}:{PORT}/  (Ctrl-C stops the server and the worker)\n",
        flush=True,
    )
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        while not stopping:
            if any(p.poll() is not None for p in processes):
                print("A process stopped by itself; stopping the other.", file=sys.stderr)
                break
            time.sleep(0.5)
    finally:
        print("Stopping the web server and the worker…", flush=True)
        stop(processes)
    return 0 if stopping else 1


if __name__ == "__main__":
    sys.exit(main())
