"""Private PostgreSQL and Redis servers for the fault tests: free ports, a temporary folder.

The fault tests kill, empty and cut these. The machine's own PostgreSQL (5432) and Redis (6379),
which CI and other test runs use, are never stopped or touched.

PostgreSQL comes from Debian's server package (`/usr/lib/postgresql/<version>/bin`: `initdb`,
`pg_ctl`), Redis from `redis-server`; `make faults-tools` installs both where they are missing.
PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` user that the
package creates.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

import psycopg
import redis

PG_SUPERUSER = "postgres"
UNACKED = "unacked"  # kombu's Redis hash of delivered, unacknowledged messages
STARTUP_TIMEOUT_S = 60


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def postgres_bin_dir() -> Path | None:
    """The newest installed PostgreSQL server's binaries, or None."""
    found = [
        path
        for path in Path("/usr/lib/postgresql").glob("*/bin")
        if (path / "initdb").exists() and (path / "pg_ctl").exists()
    ]
    found.sort(key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0)
    return found[-1] if found else None


def postgres_os_user() -> str | None:
    """Who runs the private cluster: ourselves, or `postgres` when we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(PG_SUPERUSER)
    except KeyError:
        return None
    return PG_SUPERUSER


def why_servers_are_missing() -> str | None:
    """A reason to skip, naming what to install, or None when the servers can run here."""
    if postgres_bin_dir() is None:
        return (
            "no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql: "
            "run `make faults-tools` (Debian package postgresql)"
        )
    if shutil.which("redis-server") is None:
        return "no redis-server: run `make faults-tools` (Debian package redis-server)"
    if os.geteuid() == 0 and postgres_os_user() is None:
        return "running as root, and there is no `postgres` user to own a private cluster"
    return None


def scratch_folder(prefix: str) -> Path:
    """A temporary folder that the `postgres` user can reach (pytest's tmp_path is private)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o711)
    return folder


def discard_folder(folder: Path) -> None:
    """Remove a test's servers' folder, or keep it (and say where) with FAULTS_KEEP_LOGS=1."""
    if os.environ.get("FAULTS_KEEP_LOGS"):
        print(f"fault test logs kept in {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)


def wait_until(
    predicate: Callable[[], bool], timeout: float, what: str, every: float = 0.1
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)
    raise TimeoutError(f"{what} did not happen within {timeout:.0f} s")


class PrivatePostgres:
    """A throwaway PostgreSQL cluster. `prefix` runs its commands elsewhere, e.g. in a network
    namespace (`nsenter --net=...`); `listen` is the addresses it listens on there."""

    def __init__(
        self,
        folder: Path,
        port: int,
        *,
        listen: str = "127.0.0.1",
        prefix: Sequence[str] = (),
    ) -> None:
        self.folder, self.port, self.listen, self.prefix = folder, port, listen, list(prefix)
        self.bin = postgres_bin_dir()
        self.user = postgres_os_user()
        self.data = folder / "data"
        self.log_path = folder / "postgres.log"

    def run(self, *command: str) -> None:
        assert self.bin is not None
        as_user = ["runuser", "-u", self.user, "--"] if self.user else []
        args = [*self.prefix, *as_user, str(self.bin / command[0]), *command[1:]]
        done = subprocess.run(args, capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.user:
            shutil.chown(self.folder, user=self.user)
        if not self.data.exists():
            # Trust on its own loopback/namespace addresses only, no fsync: a scratch cluster.
            self.run(
                "initdb",
                "-D",
                str(self.data),
                *f"-A trust -U {PG_SUPERUSER}".split(),
                *["-E", "UTF8", "--no-sync"],
            )
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write("host all all 0.0.0.0/0 trust\n")
        options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses='{self.listen}' "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        wait = ["-w", "-t", str(STARTUP_TIMEOUT_S)]
        self.run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log_path), "-o", options, *wait, "start"
        )

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def url(self, database: str, *, host: str = "127.0.0.1", port: int | None = None) -> str:
        return f"postgres://{PG_SUPERUSER}@{host}:{port or self.port}/{database}"

    def create_database(self, name: str, *, host: str = "127.0.0.1") -> None:
        with psycopg.connect(self.url("postgres", host=host), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')


class PrivateRedis:
    """A redis-server that keeps nothing on disk: killing it empties it."""

    def __init__(
        self,
        folder: Path,
        port: int,
        *,
        bind: str = "127.0.0.1",
        prefix: Sequence[str] = (),
        client_host: str = "127.0.0.1",
    ) -> None:
        self.folder, self.port, self.bind, self.prefix = folder, port, bind, list(prefix)
        self.client_host = client_host
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = (self.folder / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            [
                *self.prefix,
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                self.bind,
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
                "--protected-mode",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        wait_until(self.answers, STARTUP_TIMEOUT_S, f"redis-server on port {self.port}")

    def answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def client(self) -> redis.Redis:
        return redis.Redis(host=self.client_host, port=self.port, socket_timeout=5)

    def queue_length(self, queue: str) -> int:
        """Messages waiting on a queue: kombu's Redis transport keeps each queue as a list."""
        return int(cast(int, self.client().llen(queue)))

    def unacked(self) -> list[bytes]:
        """Messages delivered and not yet acknowledged, as kombu keeps them for redelivery
        (each a JSON list: the message, its exchange and its routing key)."""
        return list(cast(list[bytes], self.client().hvals(UNACKED)))

    def push(self, queue: str, message: str) -> None:
        """Put a message on a queue as kombu does (LPUSH; consumers BRPOP)."""
        self.client().lpush(queue, message)

    def kill(self) -> None:
        """SIGKILL: no chance to save anything (and it is set to save nothing anyway)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def url(self, host: str | None = None) -> str:
        return f"redis://{host or self.client_host}:{self.port}/0"
