"""The load benchmark's two stacks as they are built, without starting them: `--embedded` must
start what `make run` starts (its command lines, its settings: SQLite and the filesystem
broker in a folder of the run's own), and the default stays PostgreSQL + Redis + gunicorn.
Nothing here times anything."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import load, load_report
from bench.load_rows import read_rows
from bench.load_stack import ROOT, Stack, StackConfig, run_local

# Settings as a process started with the stack's environment builds them.
SHOW_SETTINGS = """
import json, django
django.setup()
from django.conf import settings
db = settings.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"], "name": str(db["NAME"]), "debug": settings.DEBUG,
    "transaction_mode": db["OPTIONS"].get("transaction_mode"),
    "broker": settings.CELERY_BROKER_URL, "options": settings.CELERY_BROKER_TRANSPORT_OPTIONS,
}))
"""


def embedded_stack(tmp_path: Path, **config: Any) -> Stack:
    stack = Stack(StackConfig(embedded=True, **config), run_dir=tmp_path)
    stack.port, stack.service_cores = 8123, {0}
    return stack


@pytest.fixture
def servers_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shell that names a database and a broker: make run's stack must not use them."""
    monkeypatch.setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/elsewhere")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/1")
    monkeypatch.setenv("CELERY_FS_BROKER_DIR", "/nonexistent/broker")


@pytest.mark.usefixtures("servers_in_the_environment")
def test_embedded_environment_is_make_runs_with_a_var_folder_of_its_own(tmp_path: Path) -> None:
    stack = embedded_stack(tmp_path)
    env = stack.env()
    assert env["DJANGO_SETTINGS_MODULE"] == "config.settings.local"  # the Makefile's
    assert env["COURSEWARE_VAR_DIR"] == str(tmp_path / "var")
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_FS_BROKER_DIR"):
        assert name not in env
    assert stack.database_url == f"sqlite:///{tmp_path / 'var' / 'courseware.sqlite3'}"
    assert stack.config.mode == "embedded"


@pytest.mark.usefixtures("servers_in_the_environment")
def test_embedded_settings_are_sqlite_and_the_quick_filesystem_broker(tmp_path: Path) -> None:
    stack = embedded_stack(tmp_path)
    shown = subprocess.run(
        [sys.executable, "-c", SHOW_SETTINGS],
        cwd=ROOT,
        env=stack.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    settings = json.loads(shown.stdout.strip().splitlines()[-1])
    assert settings["engine"] == "django.db.backends.sqlite3"
    assert settings["name"] == str(tmp_path / "var" / "courseware.sqlite3")
    assert settings["transaction_mode"] == "IMMEDIATE"  # a second writer waits, no 503
    assert settings["debug"] is True  # config.settings.local, as make run
    assert settings["broker"] == "filesystem://"
    assert settings["options"]["data_folder_in"] == str(tmp_path / "var" / "broker")
    assert settings["options"]["polling_interval"] <= 0.1  # not kombu's 1 s (issue 26)


def test_embedded_processes_are_make_runs_command_lines(tmp_path: Path) -> None:
    stack = embedded_stack(tmp_path)
    web, worker = stack.launches()
    local = run_local()
    assert web.argv == local.web_command(sys.executable, "127.0.0.1", "8123")
    assert web.argv[2:4] == ["runserver", "127.0.0.1:8123"] and "--noreload" in web.argv
    assert web.cores == {0}  # off the slot's timing core, as run_local.web_cores keeps it
    assert worker.argv == local.worker_command(sys.executable, "cpu", tmp_path / "var")
    assert worker.argv[worker.argv.index("-Q") + 1] == "cpu,lti"
    assert "--beat" in worker.argv and worker.cores is None
    assert web.env["DJANGO_SETTINGS_MODULE"] == worker.env["DJANGO_SETTINGS_MODULE"]
    assert worker.env["GRADERS_SLOT"] == "0"


def test_embedded_without_beat_drops_it_from_the_worker(tmp_path: Path) -> None:
    _web, worker = embedded_stack(tmp_path, beat=False).launches()
    assert "--beat" not in worker.argv


def test_the_default_stack_is_still_postgres_redis_and_gunicorn(tmp_path: Path) -> None:
    stack = Stack(StackConfig(), run_dir=tmp_path)
    stack.port = 8123
    names = [launch.name for launch in stack.launches()]
    assert names == ["web", "worker-0", "beat"]
    web = stack.launches()[0]
    assert "gunicorn" in web.argv
    assert web.env["DATABASE_URL"].startswith("postgres://")
    assert web.env["REDIS_URL"] == StackConfig().redis_url
    assert stack.config.mode == "redis"


def test_command_line_picks_the_stack() -> None:
    assert load.parse_args(["--embedded"]).embedded
    assert not load.parse_args([]).embedded
    with pytest.raises(SystemExit):
        load.parse_args(["--embedded", "--workers", "2"])


# ---------------------------------------------------------------- the record


def record(measured: str, students: int, stack: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "students": students,
        "duration_s": 75.0,
        "workers": 1,
        "web_workers": 4,
        "ramp_s": 0,
        "max_submissions": 10,
        "think_s": [1.0, 2.0],
        "service_cores": [0],
        "conn_max_age": 60,
    }
    if stack is not None:
        params["stack"] = stack
        if stack == "embedded":
            params |= {"web_workers": 1, "conn_max_age": None}
    spread = {"p50_s": 1.2, "p90_s": 2.0, "count": 10, "source": "database"}
    return {
        "bench": "load",
        "measured": measured,
        "load_average_1m": 0.3,
        "params": params,
        "latency": {},
        "submissions": {"lost": 0},
        "first_wave_accepted_per_s": None,
        "drain_s": 1.0,
        "gradings_per_min_per_slot": 18.0,
        "submit_to_graded": spread,
        "submit_to_seen": spread,
    }


def test_records_without_a_stack_read_as_redis_and_both_stacks_are_kept() -> None:
    history = [
        record("old", 1, None),
        record("redis", 1, "redis"),
        record("embedded", 1, "embedded"),
        record("fifty", 50, None),
    ]
    assert load_report.stack_of(history[0]["params"]) == "redis"
    latest = [h["measured"] for h in load_report.latest_per_size(history)]
    assert latest == ["fifty", "redis", "embedded"]
    table = load_report.history_table(history)
    assert "| stack |" in table[0]
    assert [line.split(" | ")[1] for line in table[2:]] == ["redis", "redis", "embedded", "redis"]
    side = "\n".join(load_report.stacks_side_by_side(history))
    assert "make run" in side and "PostgreSQL + Redis" in side


def test_embedded_command_line_is_written_back_as_it_was_given() -> None:
    options = load_report.options_text(record("e", 1, "embedded")["params"])
    assert options.startswith(" --embedded")
    assert "--conn-max-age" not in options
    assert "--embedded" not in load_report.options_text(record("r", 1, None)["params"])


# ---------------------------------------------------------------- the rows, from SQLite


def test_rows_are_read_from_the_embedded_sqlite_database(tmp_path: Path) -> None:
    path = tmp_path / "courseware.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            """
            CREATE TABLE submissions_submission (
                id INTEGER PRIMARY KEY, status TEXT, created_at TEXT, status_changed_at TEXT);
            CREATE TABLE submissions_grading (
                id INTEGER PRIMARY KEY, submission_id INTEGER, duration_s REAL, worker TEXT,
                report TEXT, verdict TEXT);
            """
        )
        # As Django keeps them: UTC without an offset, the report as JSON text.
        conn.executemany(
            "INSERT INTO submissions_submission VALUES (?, ?, ?, ?)",
            [
                (1, "graded", "2026-12-05 10:00:00.250000", "2026-12-05 10:00:01.750000"),
                (2, "queued", "2026-12-05 10:00:02", "2026-12-05 10:00:02"),
            ],
        )
        report = {"timings": {"check_s": 0.01, "note": "x"}, "performance": {}}
        conn.executemany(
            "INSERT INTO submissions_grading VALUES (?, ?, ?, ?, ?, ?)",
            [
                (10, 1, 1.25, "host:cpu@host", json.dumps(report), "correct"),
                (11, 1, 9.0, "later", "{}", "wrong"),  # a regrade: not the first
            ],
        )
    conn.close()
    rows = read_rows(f"sqlite:///{path}")
    assert rows is not None
    assert rows[1].finished_at is not None
    assert rows[1].finished_at - rows[1].created_at == pytest.approx(1.5)
    assert rows[1].grading_s == 1.25 and rows[1].verdict == "correct"
    assert rows[1].phases == {"check_s": 0.01}
    assert rows[2].finished_at is None and rows[2].grading_s is None


def test_the_section_is_rewritten_where_it_stands(tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    around = "# B\n\n## Before\n\na\n\n{}\n\n{}\n\n## After\n\nb\n"
    doc.write_text(around.format(load_report.TITLE, "old"))
    load_report.write_section(doc, [load_report.TITLE, "", "new", ""])
    assert doc.read_text() == around.format(load_report.TITLE, "new")
    (tmp_path / "empty.md").write_text("# B\n")
    load_report.write_section(tmp_path / "empty.md", [load_report.TITLE, "", "new"])
    assert (tmp_path / "empty.md").read_text() == f"# B\n\n{load_report.TITLE}\n\nnew\n"
