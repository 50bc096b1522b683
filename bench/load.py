"""Load benchmark: many simulated students against the real stack on this machine.

.venv/bin/python -m bench.load [--students 50] [--duration 150] [--ramp 30] [--workers 1]
    [--embedded] [--note "..."]

Starts its own stack (bench/load_stack.py: a fresh PostgreSQL database and Redis database
number on the machine's servers, gunicorn, N grading workers on the contract's command line,
beat; with --embedded, the stack `make run` starts instead: SQLite and kombu's filesystem
broker in a fresh folder, runserver, one worker on make run's command line), seeds an
offering with the students (bench/load_seed.py), warms the grading and the web workers
(`warm_up`), runs the students (bench/load_driver.py) for --duration seconds, follows the
queue until it is empty, reads the submission rows (the truth) and reports: API and page
latency p50/p99, submissions accepted per second, the drain time, gradings per minute per
slot, submit-to-graded p50/p90 and the submissions lost. Prints a Markdown table, appends a
record to bench/history.json (its params' "stack" says which stack) and rewrites its section
of docs/BENCHMARKS.md. Everything it started is stopped and its database dropped at the end,
on an error or Ctrl-C too.

Exit status 1 when a submission was lost or a process of the stack died during the run.
Never a test: nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from bench import load_report, machine
from bench.load_driver import Credentials, Plan, Recorder, WatchLimits, run_students
from bench.load_driver import watch_until_finished as watch
from bench.load_rows import read_rows
from bench.load_stack import ROOT, Stack, StackConfig, StackError

HISTORY = Path(__file__).resolve().parent / "history.json"
DOC = ROOT / "docs" / "BENCHMARKS.md"
WARMUP_TIMEOUT_S = 900.0  # a first grading may calibrate the machine's peaks first


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=50, help="concurrent students")
    parser.add_argument("--duration", type=float, default=150.0, help="students' phase, s")
    parser.add_argument("--workers", type=int, default=1, help="grading workers (slots)")
    parser.add_argument("--web-workers", type=int, default=4, help="gunicorn sync workers")
    parser.add_argument(
        "--first-slot", type=int, default=0, help="GRADERS_SLOT of the first worker (then +1)"
    )
    parser.add_argument("--max-submissions", type=int, default=3, help="per student")
    parser.add_argument(
        "--poll", type=float, default=1.5, help="status poll interval when no hint is given, s"
    )
    parser.add_argument(
        "--fixed-poll",
        action="store_true",
        help="poll every --poll seconds, ignoring the server's poll_after_s (the page before it)",
    )
    parser.add_argument("--think", type=float, nargs=2, default=(3.0, 10.0), metavar=("MIN", "MAX"))
    parser.add_argument(
        "--ramp",
        type=float,
        default=30.0,
        help="spread the students' start over this many s (0: all in the same second)",
    )
    parser.add_argument("--exercise", default="vector-add")
    parser.add_argument(
        "--samples", default="fast", help="comma-separated samples/ of the exercise, in turn"
    )
    parser.add_argument("--drain-timeout", type=float, default=1800.0, help="watch at most, s")
    parser.add_argument(
        "--stall-timeout", type=float, default=300.0, help="give up when nothing finishes for, s"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/9", help="emptied!")
    parser.add_argument("--port", type=int, default=0, help="gunicorn's port (0: a free one)")
    parser.add_argument("--no-beat", action="store_true")
    parser.add_argument(
        "--share-timing-cores",
        action="store_true",
        help="let gunicorn, beat and the students run on the grading slots' timing cores too "
        "(by default they are kept off them, as make run and deploy/ keep the web server)",
    )
    parser.add_argument(
        "--conn-max-age", type=int, default=60, help="DATABASE_CONN_MAX_AGE (the settings': 60)"
    )
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="make run's stack (SQLite, kombu's filesystem broker, runserver, one worker with "
        "beat inside) instead of PostgreSQL, Redis and gunicorn; one worker only",
    )
    parser.add_argument("--note", default="", help="e.g. what else ran on the machine")
    parser.add_argument("--history", type=Path, default=HISTORY)
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--no-record", action="store_true", help="write neither history nor doc")
    parser.add_argument("--json-out", type=Path, help="also write the record here")
    parser.add_argument("--keep-logs", action="store_true")
    args = parser.parse_args(argv)
    if args.students < 1 or args.workers < 1 or args.max_submissions < 1:
        parser.error("--students, --workers and --max-submissions must be at least 1")
    if args.duration <= 0 or args.poll <= 0 or args.think[0] > args.think[1]:
        parser.error("--duration and --poll must be positive, and --think MIN <= MAX")
    if args.embedded and args.workers != 1:
        parser.error("--embedded starts make run's one worker: --workers 1")
    return args


def web_workers(args: argparse.Namespace) -> int:
    """Gunicorn's processes; make run's runserver is one process (a thread per request)."""
    return 1 if args.embedded else int(args.web_workers)


def sample_codes(exercise: str, names: str) -> list[str]:
    folders = sorted(ROOT.glob(f"exercises/*/{exercise}/samples"))
    if not folders:
        raise SystemExit(f"No exercises/*/{exercise}/samples folder: check --exercise.")
    codes = []
    for name in names.split(","):
        path = folders[0] / f"{name.strip()}.py"
        if not path.exists():
            raise SystemExit(
                f"No sample {path}: pick from {sorted(p.stem for p in folders[0].glob('*.py'))}"
            )
        codes.append(path.read_text())
    return codes


def machine_line() -> str:
    box = machine.describe()
    return (
        f"{box['cpu']}, {box['cores']} cores, last-level cache {box['last-level cache']}, "
        f"{box['memory']}, kernel {box['kernel']}, torch {box['torch']}"
    )


def say(message: str) -> None:
    print(f"load bench: {message}", file=sys.stderr, flush=True)


def stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the same clean-up as Ctrl-C


def people_of(stack: Stack, students: int, warmup: int) -> list[dict[str, Any]]:
    out = stack.run_dir / "people.json"
    stack.run_python(
        "-m", "bench.load_seed", "--students", str(students), "--warmup", str(warmup),
        "--out", str(out),
    )  # fmt: skip
    people: list[dict[str, Any]] = json.loads(out.read_text())
    return people


def credentials(person: dict[str, Any]) -> Credentials:
    name, value = person["cookie"]
    return Credentials(person["username"], person["token"], (name, value))


# A submission the precheck rejects at once: it goes the whole way (web, broker, worker,
# database) in well under a second of worker time.
REJECTED_AT_ONCE = "this is not Python (\n"


def warm_round(stack: Stack, people: list[Credentials], plan: Plan, code: str) -> list[int]:
    """Everyone submits `code` at once and follows it until finished: the ids."""
    warm = Plan(
        base_url=plan.base_url,
        exercise=plan.exercise,
        codes=[code],
        duration_s=WARMUP_TIMEOUT_S,
        max_submissions=1,
        poll_s=1.0,
        think_s=(0.0, 0.0),
    )
    recorder = Recorder()
    asyncio.run(run_students(people, warm, recorder))
    unfinished = [a.id for a in recorder.accepted if a.seen_finished_at is None]
    if len(recorder.accepted) < len(people) or unfinished:
        raise StackError(
            f"the warm-up was not graded within {WARMUP_TIMEOUT_S:.0f} s (accepted "
            f"{len(recorder.accepted)} of {len(people)}, refused {dict(recorder.refused)}, "
            f"unfinished {unfinished}); see the logs in {stack.run_dir}"
        )
    return [a.id for a in recorder.accepted]


def warm_up(stack: Stack, people: list[Credentials], plan: Plan, workers: int) -> list[int]:
    """Before the measured phase, as on a site that has been up a while: one real grading per
    worker (imports; a first grading may calibrate the peaks), then a burst of submissions the
    precheck rejects, so that every gunicorn worker has loaded its code and opened its
    connections to PostgreSQL and Redis. Returns the warm-up's submission ids."""
    began = time.monotonic()
    ids = warm_round(stack, people[:workers], plan, plan.codes[0])
    ids += warm_round(stack, people[workers:], plan, REJECTED_AT_ONCE)
    say(f"warm-up: {len(ids)} submissions in {time.monotonic() - began:.0f} s")
    return ids


def measure(args: argparse.Namespace, stack: Stack, plan_args: dict[str, Any]) -> dict[str, Any]:
    people = people_of(stack, args.students, args.workers + 2 * web_workers(args))
    students = [credentials(p) for p in people if not p["warmup"]]
    tokens = {p["username"]: p["token"] for p in people}
    plan = Plan(base_url=stack.base_url, **plan_args)
    warm = [credentials(p) for p in people if p["warmup"]]
    warmup_ids = warm_up(stack, warm, plan, args.workers)

    say(f"{len(students)} students for {args.duration:.0f} s on {stack.base_url}")
    recorder = Recorder()
    started, ended = asyncio.run(run_students(students, plan, recorder))
    say(f"students done: {len(recorder.accepted)} accepted; following the queue")

    last_said = [0.0]

    def progress(pending: int, elapsed: float) -> None:
        if elapsed - last_said[0] >= 15 or pending == 0:
            last_said[0] = elapsed
            say(f"queue: {pending} waiting after {elapsed:.0f} s")

    limits = WatchLimits(stall_s=args.stall_timeout, total_s=args.drain_timeout)
    watched = asyncio.run(watch(stack.base_url, recorder.accepted, tokens, limits, progress))
    exit_codes = stack.exit_codes()
    return load_report.build_record(
        params={k: v for k, v in plan_args.items() if k != "codes"}
        | {
            "students": args.students,
            "workers": args.workers,
            "web_workers": web_workers(args),
            "samples": args.samples.split(","),
            "beat": not args.no_beat,
            # SQLite: the settings' own (0, a connection per request); not set by the bench.
            "conn_max_age": None if args.embedded else args.conn_max_age,
            "service_cores": sorted(stack.service_cores or ()),
            # Which broker, database and web server (load_report.STACKS); records from
            # before this field ran on "redis".
            "stack": stack.config.mode,
        },
        recorder=recorder,
        db_rows=read_rows(stack.database_url),
        warmup_ids=warmup_ids,
        context={
            "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
            "load_average_1m": args.load_before,
            "machine": args.machine,
            "slots": args.workers,
            "students_s": ended - started,
            "watched_s": watched,
            "exit_codes": exit_codes,
            "note": args.note,
        },
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.load_before = os.getloadavg()[0]
    args.machine = machine_line()
    plan_args = {
        "exercise": args.exercise,
        "codes": sample_codes(args.exercise, args.samples),
        "duration_s": args.duration,
        "max_submissions": args.max_submissions,
        "poll_s": args.poll,
        "follow_hint": not args.fixed_poll,
        "think_s": tuple(args.think),
        "ramp_s": args.ramp,
        "seed": args.seed,
    }
    config = StackConfig(
        postgres=args.postgres,
        redis_url=args.redis,
        workers=args.workers,
        first_slot=args.first_slot,
        web_workers=args.web_workers,
        port=args.port,
        beat=not args.no_beat,
        conn_max_age=args.conn_max_age,
        keep_logs=args.keep_logs,
        timing_cores_apart=not args.share_timing_cores,
        embedded=args.embedded,
    )
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    began = time.monotonic()
    with Stack(config) as stack:
        say(
            f"{load_report.STACKS[config.mode]} up in {time.monotonic() - began:.0f} s "
            f"(logs in {stack.run_dir})"
        )
        if stack.service_cores:
            # The students' client stays off the timing cores as the web tier does.
            os.sched_setaffinity(0, stack.service_cores)
            say(f"web, beat and the students on cores {sorted(stack.service_cores)}")
        record = measure(args, stack, plan_args)
        died = [name for name, code in record["exit_codes"].items() if code is not None]
        stack.failed = bool(died or record["submissions"]["lost"])
    print("\n".join(load_report.markdown_table(record)))
    print()
    print("\n".join(load_report.latency_table(record)))
    if args.json_out:
        args.json_out.write_text(json.dumps(record, indent=2) + "\n")
    if not args.no_record:
        history = load_report.append_history(args.history, record)
        load_report.write_section(args.doc, load_report.doc_section(record, history))
        say(f"recorded in {args.history} and {args.doc}")
    if died:
        say(f"these processes died during the run: {died}")
    return 1 if died or record["submissions"]["lost"] else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the stack has been stopped by now
        say("interrupted; every process it started is stopped and its database dropped")
        sys.exit(130)
