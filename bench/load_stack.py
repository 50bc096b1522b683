"""The real stack on loopback for the load benchmark: its own PostgreSQL database and Redis
database number on the machine's servers, gunicorn, N grading workers and beat; or, with
`embedded` on, the stack `make run` starts (scripts/run_local.py): SQLite and kombu's
filesystem broker in a fresh folder, Django's runserver, one worker with beat inside it.

`Stack` is a context manager: leaving it (normally, on an error or on Ctrl-C) stops every
process it started, drops its database and empties its Redis database. Children lead their own
process groups (a signal reaches a worker's pool and sandboxes too) and are asked by the kernel
to die with this process if it is killed outright (PR_SET_PDEATHSIG); a database left by such a
death is dropped by the next run (`drop_orphaned_databases`).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType

import httpx
import psycopg
import redis
from psycopg import sql

from graders.sandbox.launch import cores_apart_from_timing

ROOT = Path(__file__).resolve().parents[1]
DB_PREFIX = "bench_load_"
PR_SET_PDEATHSIG = 1


class StackError(RuntimeError):
    """A part of the stack did not come up; the message says which and where its log is."""


@dataclass(frozen=True)
class StackConfig:
    postgres: str = "postgres://postgres@127.0.0.1:5432"  # server; the database is ours
    redis_url: str = "redis://127.0.0.1:6379/9"  # its own database number, emptied
    workers: int = 1  # grading workers, one slot each (contract: one worker per device)
    first_slot: int = 0  # their GRADERS_SLOT: first_slot, first_slot + 1, ...
    web_workers: int = 4  # gunicorn's sync workers, as deploy/web.sh starts
    port: int = 0  # 0: a free port
    beat: bool = True  # the stale-submission sweep, as a site runs it
    conn_max_age: int = 60  # DATABASE_CONN_MAX_AGE: the settings' default unless asked
    keep_logs: bool = False
    startup_timeout_s: float = 180.0
    # On (the default), gunicorn, beat and the students' driver run only on the cores the
    # grading slots do not time on, as `make run` and a deployment keep them (docs/DEPLOY.md).
    # Off, they share every core with the calls being timed.
    timing_cores_apart: bool = True
    # On: `make run`'s stack instead (scripts/run_local.py): SQLite and the filesystem broker
    # in the run's folder, runserver, one worker on make run's command line with beat inside
    # (`beat` off drops --beat from it). postgres, redis_url, web_workers and conn_max_age
    # are then unused.
    embedded: bool = False

    @property
    def mode(self) -> str:
        """What history records as the run's stack: "embedded" or "redis"."""
        return "embedded" if self.embedded else "redis"


# What `make run` leaves out of the environment: a newcomer's shell sets none of these, so the
# settings fall back to SQLite in var/ and the filesystem broker in var/broker/.
EMBEDDED_UNSET = (
    "DATABASE_URL",
    "DATABASE_CONN_MAX_AGE",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "CELERY_FS_BROKER_DIR",
    "DJANGO_DEBUG",
)
LOCAL_SETTINGS = "config.settings.local"  # the Makefile's DJANGO_SETTINGS_MODULE for make run


def run_local() -> ModuleType:
    """scripts/run_local.py, whose command lines the embedded stack starts (scripts/ is not a
    package, so it is loaded from its path as tests/deploy does)."""
    spec = importlib.util.spec_from_file_location("run_local", ROOT / "scripts" / "run_local.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Launch:
    """One long-running process of the stack: its whole command line, environment and cores."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cores: set[int] | None = None


def cores_off_timing(config: StackConfig) -> set[int] | None:
    """Where gunicorn, beat and the students run; None: anywhere."""
    if not config.timing_cores_apart:
        return None
    slots = range(config.first_slot, config.first_slot + config.workers)
    return cores_apart_from_timing(slots)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def die_with_parent() -> None:
    """Runs in the child before exec: the kernel SIGKILLs it if this process dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def admin_connection(server: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(f"{server.rstrip('/')}/postgres", autocommit=True)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def drop_orphaned_databases(server: str) -> list[str]:
    """Drop bench_load_<pid> databases whose run died without cleaning up (its pid is gone)."""
    dropped = []
    with admin_connection(server) as conn:
        names = [
            str(row[0])
            for row in conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", (DB_PREFIX + "%",)
            )
        ]
        for name in names:
            match = re.fullmatch(DB_PREFIX + r"(\d+)", name)
            if match and not pid_alive(int(match.group(1))):
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )
                dropped.append(name)
    return dropped


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


@dataclass
class Stack:
    config: StackConfig
    db_name: str = field(default_factory=lambda: f"{DB_PREFIX}{os.getpid()}")
    run_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="bench_load_")))
    processes: list[Process] = field(default_factory=list)
    port: int = 0
    database_created: bool = False
    failed: bool = False
    service_cores: set[int] | None = None  # where gunicorn and beat run; None: anywhere

    @property
    def var_dir(self) -> Path:
        return self.run_dir / "var"

    @property
    def database_url(self) -> str:
        if self.config.embedded:  # the settings' default under COURSEWARE_VAR_DIR
            return f"sqlite:///{self.var_dir / 'courseware.sqlite3'}"
        return f"{self.config.postgres.rstrip('/')}/{self.db_name}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, **extra: str) -> dict[str, str]:
        if self.config.embedded:
            return self.embedded_env(**extra)
        # config.settings.base: production's settings without its Secure-only cookies, which
        # a client on plain http would never send back; DEBUG off as in production.
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "0",
            "DATABASE_URL": self.database_url,
            "DATABASE_CONN_MAX_AGE": str(self.config.conn_max_age),
            "REDIS_URL": self.config.redis_url,
            "COURSEWARE_VAR_DIR": str(self.var_dir),
            "GRADING_DEVICE_KIND": "cpu",
            "GRADERS_WORKER_KIND": "cpu",
            "LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("CELERY_BROKER_URL", None)  # REDIS_URL decides the broker
        env.update(extra)
        return env

    def embedded_env(self, **extra: str) -> dict[str, str]:
        """make run's environment: no database or broker named, so the settings' embedded
        defaults apply under a var/ folder of this run's own (a fresh SQLite file and broker
        folder); the Makefile's settings module (DEBUG on, as a newcomer runs it)."""
        env = {key: value for key, value in os.environ.items() if key not in EMBEDDED_UNSET}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": LOCAL_SETTINGS,
                "COURSEWARE_VAR_DIR": str(self.var_dir),
                "GRADING_DEVICE_KIND": "cpu",
                "GRADERS_WORKER_KIND": "cpu",
                "GRADERS_SLOT": str(self.config.first_slot),
                "LOG_LEVEL": "INFO",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(extra)
        return env

    # ------------------------------------------------------------------ up

    def __enter__(self) -> Stack:
        try:
            self.start()
        except BaseException:
            self.failed = True
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.failed = self.failed or exc_type is not None
        self.stop()

    def start(self) -> None:
        if not self.config.embedded:
            drop_orphaned_databases(self.config.postgres)
            with admin_connection(self.config.postgres) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.db_name)))
            self.database_created = True
            redis.Redis.from_url(self.config.redis_url).flushdb()
        # What make run and deploy/web.sh do before the processes start (the demo offering
        # comes with the students: bench/load_seed.py).
        self.manage("migrate", "--noinput")
        self.manage("sync_content")
        self.port = self.config.port or free_port()
        self.service_cores = cores_off_timing(self.config)
        for launch in self.launches():
            self.spawn(launch)
        self.wait_for_web()
        for process in self.processes:
            if process.name.startswith("worker-"):
                self.wait_for_log(process, " ready.")

    def launches(self) -> list[Launch]:
        """The processes to start, web first; self.port and self.service_cores are set."""
        if self.config.embedded:
            return self.embedded_launches()
        python = sys.executable
        launches = [
            Launch(
                "web",
                [
                    python,
                    "-m",
                    "gunicorn",
                    "config.wsgi:application",
                    "--bind",
                    f"127.0.0.1:{self.port}",
                    "--workers",
                    str(self.config.web_workers),
                    "--timeout",
                    "120",
                    "--access-logfile",
                    "-",  # as deploy/web.sh serves: into web.log
                ],
                self.env(),
                self.service_cores,
            )
        ]
        first = self.config.first_slot
        for slot in range(first, first + self.config.workers):
            # The contract's worker command line: one process per slot, prefetch one.
            launches.append(
                Launch(
                    f"worker-{slot}",
                    [
                        python,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "worker",
                        "-Q",
                        "cpu",
                        "--concurrency",
                        "1",
                        "--prefetch-multiplier",
                        "1",
                        "--hostname",
                        f"cpu-{slot}@%h",
                        "--pool",
                        "prefork",
                        "--loglevel",
                        "INFO",
                    ],
                    # As deploy/worker.sh starts a cpu worker: its slot, and no GPU in sight.
                    self.env(GRADERS_SLOT=str(slot), CUDA_VISIBLE_DEVICES=""),
                )
            )
        if self.config.beat:
            launches.append(
                Launch(
                    "beat",
                    [
                        python,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "beat",
                        "--schedule",
                        str(self.run_dir / "celerybeat-schedule"),
                        "--loglevel",
                        "INFO",
                    ],
                    self.env(),
                    self.service_cores,
                )
            )
        return launches

    def embedded_launches(self) -> list[Launch]:
        """make run's two processes on its own command lines (scripts/run_local.py): runserver
        on the cores apart from the slot's timing core, and one worker (beat inside it)
        wherever the kernel puts it."""
        local = run_local()
        python = sys.executable
        return [
            Launch(
                "web",
                local.web_command(python, "127.0.0.1", str(self.port)),
                self.env(),
                self.service_cores,
            ),
            Launch(
                f"worker-{self.config.first_slot}",
                local.worker_command(python, "cpu", self.var_dir, beat=self.config.beat),
                self.env(),
            ),
        ]

    def manage(self, *args: str, timeout: float = 600) -> str:
        """A management command, as deploy/web.sh runs them; its output, or StackError."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise StackError(
                f"manage.py {' '.join(args)} failed ({done.returncode}):\n"
                f"{done.stdout[-2000:]}{done.stderr[-4000:]}"
            )
        return done.stdout

    def run_python(self, *args: str, timeout: float = 600) -> str:
        """`python <args>` in the stack's environment; its output, or StackError."""
        done = subprocess.run(
            [sys.executable, *args],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise StackError(f"python {' '.join(args)} failed:\n{done.stderr[-4000:]}")
        return done.stdout

    def spawn(self, launch: Launch) -> None:
        """Start a child leading its own process group, on `launch.cores` when given."""
        cores = launch.cores

        def before_exec() -> None:
            die_with_parent()
            if cores:
                os.sched_setaffinity(0, cores)

        log = self.run_dir / f"{launch.name}.log"
        with log.open("ab") as out:
            popen = subprocess.Popen(
                launch.argv,
                cwd=ROOT,
                env=launch.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=before_exec,
            )
        self.processes.append(Process(launch.name, popen, log))

    def check_alive(self, process: Process) -> None:
        if process.popen.poll() is not None:
            raise StackError(
                f"{process.name} exited with {process.popen.returncode}; its log "
                f"({process.log}) ends:\n{tail(process.log)}"
            )

    def wait_for_web(self) -> None:
        web = self.processes[0]
        deadline = time.monotonic() + self.config.startup_timeout_s
        while time.monotonic() < deadline:
            self.check_alive(web)
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base_url}/login/", timeout=5).status_code == 200:
                    return
            time.sleep(0.5)
        raise StackError(f"gunicorn did not answer on {self.base_url}; see {web.log}")

    def wait_for_log(self, process: Process, marker: str) -> None:
        deadline = time.monotonic() + self.config.startup_timeout_s
        while time.monotonic() < deadline:
            self.check_alive(process)
            if marker in process.log.read_text(errors="replace"):
                return
            time.sleep(0.5)
        raise StackError(f"{process.name} did not log {marker!r}; see {process.log}")

    def exit_codes(self) -> dict[str, int | None]:
        """Each process's exit code, None while it runs: a worker that died is a finding."""
        return {p.name: p.popen.poll() for p in self.processes}

    # ------------------------------------------------------------------ down

    def stop(self) -> None:
        """Stop everything this stack started; safe to call twice, and never raises."""
        # A second Ctrl-C must not leave processes or the database behind.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            self.stop_processes()
            self.drop_database()
            if not self.config.embedded:  # the embedded database and broker are in run_dir
                with contextlib.suppress(redis.RedisError):
                    redis.Redis.from_url(self.config.redis_url).flushdb()
            if self.failed or self.config.keep_logs:
                print(f"load bench: logs kept in {self.run_dir}", file=sys.stderr)
            else:
                shutil.rmtree(self.run_dir, ignore_errors=True)
        finally:
            signal.signal(signal.SIGINT, previous)

    def stop_processes(self) -> None:
        # SIGTERM to each leader: Celery then stops its pool, gunicorn its workers.
        for process in self.processes:
            if process.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.popen.terminate()
        deadline = time.monotonic() + 20
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            # The whole group: a grading's sandbox, a pool child, anything left behind.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.popen.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.popen.wait(timeout=10)
        self.processes.clear()

    def drop_database(self) -> None:
        if not self.database_created:
            return
        try:
            with admin_connection(self.config.postgres) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(self.db_name)
                    )
                )
            self.database_created = False
        except psycopg.Error as exc:
            print(
                f"load bench: could not drop database {self.db_name} ({exc}); "
                f"drop it with: psql -h 127.0.0.1 -U postgres -c 'DROP DATABASE "
                f"{self.db_name} WITH (FORCE)'",
                file=sys.stderr,
            )


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"
