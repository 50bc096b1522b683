"""The site's own processes for the fault tests, each a real process on the private servers.

`SiteProcess` runs the web server (gunicorn, as deploy/web.sh does) or a Celery worker (the
command the issue-14 contract gives), with DATABASE_URL and REDIS_URL pointing wherever the
test says (through a proxy it cuts, or across a network namespace). The test process talks
to them as a student would (HTTP) and reads the truth straight from the private database.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psycopg

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")

# Wrong on the first check: one sandbox run (~4 s here) instead of a full timed grading (~20 s),
# for the tests where what matters is the message's path, not the grade.
WRONG = "def vector_add(a, b):\n    return a - b\n"
# The same, with an import that takes 8 s: a grading certain to be under way for that long
# after the claim, however fast the engine gets (warm sandboxes), so that a test can cut
# something "mid-job" without racing it.
SLOW = "import time\n\ntime.sleep(8)\n\n\n" + WRONG

# Variables of the suite's own run that would point a site process at the suite's broker.
SUITE_ONLY = ("CELERY_BROKER_URL", "CELERY_FS_BROKER_DIR", "DATABASE_URL", "REDIS_URL")


def wait_for(predicate: Callable[[], T], timeout: float, every: float = 0.25) -> T | None:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(every)


def site_environment(*, database_url: str, redis_url: str, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SUITE_ONLY}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def seed_database(env: dict[str, str]) -> dict[str, str]:
    """Migrate and enrol people in the database `env` names; their API tokens by name."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.faults.seed"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    tokens: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return tokens


class SiteProcess:
    """One long-running process of the site, its output in a log file it appends to."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        env: dict[str, str],
        log_path: Path,
        *,
        prefix: Sequence[str] = (),
    ) -> None:
        self.name, self.command, self.env = name, list(command), env
        self.log_path, self.prefix = log_path, list(prefix)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_offset = 0

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        assert not self.running, f"{self.name} is already running"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [*self.prefix, *self.command],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stopping it stops its children too
            )

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 30) -> None:
        if not self.running:
            return
        assert self.proc is not None
        os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def output(self, since_start: bool = True) -> str:
        if not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as log:
            log.seek(self.log_offset if since_start else 0)
            return log.read().decode(errors="replace")

    def tail(self, chars: int = 6000) -> str:
        return f"--- {self.name} ({self.log_path}) ---\n" + self.output(False)[-chars:]

    def wait_for_output(self, pattern: str, timeout: float) -> re.Match[str] | None:
        """The first match of `pattern` in what it printed since it started, waiting for it;
        None if it did not come (or the process ended first)."""

        def found() -> re.Match[str] | None:
            match = re.search(pattern, self.output())
            if match is None and not self.running:
                raise AssertionError(f"{self.name} exited early\n{self.tail()}")
            return match

        return wait_for(found, timeout)


def web_server(env: dict[str, str], bind: str, log_path: Path, **kw: Any) -> SiteProcess:
    """gunicorn, as deploy/web.sh runs it (two workers: one slow request does not block all)."""
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--workers", "2"]
    command += ["--timeout", "60", "--bind", bind]
    # Its control socket would be ~/.gunicorn/gunicorn.ctl, shared with every other gunicorn of
    # this user on the machine (another test run's, a benchmark's).
    command += ["--no-control-socket"]
    return SiteProcess("web", command, env, log_path, **kw)


def grading_worker(
    env: dict[str, str], slot: int, log_path: Path, *, kind: str = "cpu", **kw: Any
) -> SiteProcess:
    """One worker per slot, as the issue-14 contract starts it."""
    env = {**env, "GRADERS_WORKER_KIND": kind, "GRADERS_SLOT": str(slot)}
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO"]
    command += ["-Q", kind, "--concurrency", "1", "--prefetch-multiplier", "1"]
    command += ["--without-gossip", "--without-mingle", "--hostname", f"{kind}-{slot}@%h"]
    return SiteProcess(f"worker {kind}-{slot}", command, env, log_path, **kw)


WORKER_READY = r"\S+@\S+ ready\."


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


class Browser:
    """HTTP as a student's browser or API client does it: cookies, a language, a token."""

    def __init__(self, base: str, *, token: str | None = None, language: str = "en") -> None:
        self.base, self.token, self.language = base.rstrip("/"), token, language
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def request(
        self,
        method: str,
        path: str,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        headers = {"Accept-Language": self.language, **(headers or {})}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        request = urllib.request.Request(self.base + path, data=data, method=method)
        for name, value in headers.items():
            request.add_header(name, value)
        try:
            with self.opener.open(request, timeout=60) as response:
                return Answer(response.status, dict(response.headers), response.read().decode())
        except urllib.error.HTTPError as error:
            return Answer(error.code, dict(error.headers), error.read().decode())

    def get(self, path: str) -> Answer:
        return self.request("GET", path)

    def up(self) -> bool:
        try:
            return self.get("/login/").status == 200
        except OSError:
            return False

    def log_in(self, username: str, password: str) -> None:
        page = self.get("/login/")
        match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.body)
        assert match, page.body[:500]
        form = {"username": username, "password": password, "csrfmiddlewaretoken": match[1]}
        answer = self.request(
            "POST",
            "/login/",
            urllib.parse.urlencode(form).encode(),
            {"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert answer.status == 200 and "logout" in answer.body, answer.body[:500]

    def submit(self, code: str, exercise: str = "vector-add") -> int:
        body = json.dumps({"exercise": exercise, "code": code}).encode()
        json_body = {"Content-Type": "application/json"}
        answer = self.request("POST", "/api/v1/submissions", body, json_body)
        assert answer.status == 201, answer.body
        return int(answer.json()["id"])


class Truth:
    """The private database read directly (never through the proxy the tests cut)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def rows(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, connect_timeout=10) as conn:
            return conn.execute(sql, params).fetchall()

    def status(self, submission_id: int) -> str:
        rows = self.rows("SELECT status FROM submissions_submission WHERE id = %s", submission_id)
        return str(rows[0][0])

    def gradings(self, submission_id: int) -> list[dict[str, Any]]:
        rows = self.rows(
            "SELECT verdict, gradable, worker, run_key FROM submissions_grading "
            "WHERE submission_id = %s ORDER BY id",
            submission_id,
        )
        names = ("verdict", "gradable", "worker", "run_key")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def finished(self, submission_id: int) -> str | None:
        status = self.status(submission_id)
        return None if status in ("queued", "running") else status
