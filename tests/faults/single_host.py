"""One private site on this machine for the fault tests: its servers and its processes.

PostgreSQL (a cluster of our own) sits behind a TCP proxy that the tests cut; Redis is a
redis-server of our own that they kill. The web server (gunicorn) and one grading worker reach
both the way production does. tests/faults/conftest.py starts one for the whole run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.faults import servers
from tests.faults.stack import (
    WORKER_READY,
    Browser,
    SiteProcess,
    Truth,
    grading_worker,
    seed_database,
    site_environment,
    wait_for,
    web_server,
)
from tests.faults.tcp_proxy import TcpProxy

# An idle worker sends itself a wake-up for work of its kind that waited this long in the
# database (a lost message), looking at every heartbeat. Production: 30 s and 5 s.
WAKE_AFTER_S = 2
HEARTBEAT_S = 2


@dataclass
class Site:
    folder: Path
    postgres: servers.PrivatePostgres
    redis: servers.PrivateRedis
    proxy: TcpProxy
    web: SiteProcess
    worker: SiteProcess
    tokens: dict[str, str]
    truth: Truth
    base: str

    def student(self, name: str = "alice", language: str = "en") -> Browser:
        return Browser(self.base, token=self.tokens[name], language=language)

    def start_worker(self) -> None:
        if not self.worker.running:
            self.worker.start()
        assert self.worker.wait_for_output(WORKER_READY, timeout=120), self.worker.tail()

    def logs(self) -> str:
        return "\n".join(process.tail() for process in (self.worker, self.web))


@contextmanager
def running_site() -> Iterator[Site]:
    folder = servers.scratch_folder("courseware-faults-")
    postgres = servers.PrivatePostgres(folder / "postgres", servers.free_port())
    redis = servers.PrivateRedis(folder / "redis", servers.free_port())
    proxy = TcpProxy(("127.0.0.1", postgres.port))
    web: SiteProcess | None = None
    worker: SiteProcess | None = None
    try:
        postgres.start()
        postgres.create_database("courseware")
        redis.start()
        proxy.start()
        direct = postgres.url("courseware")
        tokens = seed_database(site_environment(database_url=direct, redis_url=redis.url()))
        # The site's processes reach PostgreSQL only through the proxy.
        env = site_environment(
            database_url=postgres.url("courseware", port=proxy.port) + "?connect_timeout=5",
            redis_url=redis.url(),
            SUBMISSIONS_WAKE_AFTER_S=str(WAKE_AFTER_S),
            FLEET_HEARTBEAT_S=str(HEARTBEAT_S),
        )
        port = servers.free_port()
        web = web_server(env, f"127.0.0.1:{port}", folder / "web.log")
        worker = grading_worker(env, 0, folder / "worker.log")
        web.start()
        base = f"http://127.0.0.1:{port}"
        assert wait_for(Browser(base).up, timeout=60), web.tail()
        yield Site(folder, postgres, redis, proxy, web, worker, tokens, Truth(direct), base)
    finally:
        for process in (worker, web):
            if process is not None:
                process.stop()
        proxy.close()
        redis.kill()
        postgres.stop()
        servers.discard_folder(folder)
