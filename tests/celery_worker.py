"""A real Celery worker process on the real broker, against the test database.

Shared by the end-to-end and the browser tests; their conftest files import the fixture.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from kombu import Queue

from config.celery_app import app

ROOT = Path(__file__).resolve().parents[1]


def database_url_for_worker() -> str:
    """The test database (pytest-django renamed it), as a URL the worker's settings read."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


class Worker:
    """Starts and stops `celery worker` as a separate process, logging to a file.

    With a `slot`, it starts as the fleet's workers do (the contract in README's operations
    section): `-Q <kind> --concurrency 1 --prefetch-multiplier 1 --hostname <kind>-<slot>@%h`
    with GRADERS_WORKER_KIND and GRADERS_SLOT set; `env` adds to its environment."""

    def __init__(
        self,
        log_path: Path,
        *,
        kind: str = "cpu",
        slot: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.log_path = log_path
        self.kind, self.slot = kind, slot
        self.extra_env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def _node_prefix(self) -> str:
        return f"e2e-{os.getpid()}" if self.slot is None else f"{self.kind}-{self.slot}"

    @property
    def node_name(self) -> str:
        """The Celery node name (`%h` is this host's name), as the fleet registry and a
        claim's `claimed_by` hold it."""
        return f"{self._node_prefix}@{socket.gethostname()}"

    def start(self) -> None:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": database_url_for_worker(),
            "CELERY_FS_BROKER_DIR": str(settings.CELERY_FS_BROKER_DIR),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "GRADERS_WORKER_KIND": self.kind,
            **self.extra_env,
        }
        if self.slot is not None:
            env["GRADERS_SLOT"] = str(self.slot)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                self.kind,
                "--concurrency",
                "1",
                "--prefetch-multiplier",
                "1",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"{self._node_prefix}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def kill(self) -> None:
        """SIGKILL the whole worker (main process, pool child and the sandbox under it), as a
        machine that dies would: nothing gets to clean up or say goodbye."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]


def purge_grading_queue() -> None:
    with app.connection_for_write() as conn:
        queue = Queue("cpu", durable=True, auto_delete=False).bind(conn.default_channel)
        queue.queue_declare()
        queue.purge()


@pytest.fixture
def worker(live_server, transactional_db, tmp_path: Path) -> Iterator[Worker]:
    """Not started: the test starts it when it wants (to show queued work waits for it)."""
    purge_grading_queue()
    process = Worker(tmp_path / "worker.log")
    yield process
    process.stop()
    connection.close()


def wait_for(predicate, timeout: float, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    return None
