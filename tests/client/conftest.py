"""The client's tests run `python -m courseware.client` as a subprocess against the live test
server (pytest-django's live_server), with its own config folder, so nothing of the machine's
own settings (a real ~/.config/gpucourse, GPUCOURSE_* variables) leaks in or is touched."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from courseware.accounts.services import token_issue
from tests.celery_worker import worker
from tests.conftest import Cast, make_cast

__all__ = ["CliRun", "Terminal", "student", "terminal", "worker"]

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Terminal:
    """A shell for the client: its environment, its home, and a way to run a command."""

    home: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def config_file(self) -> Path:
        return self.home / ".config" / "gpucourse" / "config.json"

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "courseware.client", *args]

    def run(self, *args: str, stdin: str = "", timeout: float = 120) -> CliRun:
        done = subprocess.run(
            self.command(*args),
            cwd=ROOT,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=timeout,
        )
        return CliRun(done.returncode, done.stdout, done.stderr)


@dataclass
class CliRun:
    code: int
    out: str
    err: str

    def __str__(self) -> str:  # what an assert shows
        return f"exit {self.code}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


@pytest.fixture
def terminal(tmp_path: Path) -> Terminal:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GPUCOURSE_", "LC_", "XDG_")) and key not in ("LANG", "BROWSER")
    }
    env.update(
        HOME=str(home),
        LANG="C.UTF-8",  # the server's default language; a test that wants another sets it
        PYTHONIOENCODING="utf-8",
        TZ="UTC",
    )
    return Terminal(home=home, env=env)


@dataclass
class Student:
    cast: Cast
    server: str
    token: str


@pytest.fixture
def student(live_server, transactional_db, terminal: Terminal) -> Student:
    """alice, enrolled, with her token, and a terminal pointed at the live server by the
    environment (the login test stores them in the file instead)."""
    cast = make_cast()
    token = token_issue(user=cast.alice).key
    terminal.env.update(GPUCOURSE_SERVER=live_server.url, GPUCOURSE_TOKEN=token)
    return Student(cast, live_server.url, token)
