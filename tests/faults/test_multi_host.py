"""Beyond one machine: web, Redis and PostgreSQL on one host, a worker on each of two others.

The hosts are network namespaces (tests/faults/netns.py), each worker with its own link to the
server host and its own hostname. Submissions spread across both workers; one worker's link is
cut (`ip link set eth0 down`) while it grades, and its job is graded by the other once its
heartbeat in the database goes stale (courseware.fleet.recovery). When the link comes back, the
cut-off worker's late result is discarded: every submission is graded exactly once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.faults import servers
from tests.faults.netns import Host, Topology, why_namespaces_are_missing
from tests.faults.stack import (
    SLOW,
    WORKER_READY,
    WRONG,
    Browser,
    SiteProcess,
    Truth,
    grading_worker,
    seed_database,
    site_environment,
    wait_for,
    web_server,
)

pytestmark = pytest.mark.e2e

PG_PORT, REDIS_PORT, WEB_PORT = 15432, 16379, 8000  # inside the server's own namespace
# A worker silent this long is gone and loses its job (production: 30 s, beating every 5 s).
HEARTBEAT_S, GONE_AFTER_S = 2, 12
# How long a cut-off worker's database calls wait before they count as failed (production:
# 10 s and 30 s, config/settings/base.py), so it notices the cut while the test runs.
CUT_OFF_NOTICED = "connect_timeout=3&tcp_user_timeout=5000"


@dataclass
class Cluster:
    topology: Topology
    workers: dict[str, SiteProcess]  # by hostname
    hosts: dict[str, Host]
    truth: Truth
    tokens: dict[str, str]
    base: str
    web: SiteProcess

    def logs(self) -> str:
        return "\n".join(p.tail() for p in (*self.workers.values(), self.web))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    reason = why_namespaces_are_missing() or servers.why_servers_are_missing()
    if reason:
        pytest.skip(reason)
    folder = servers.scratch_folder("courseware-multihost-")
    topology = Topology.build(workers=2)
    server, here = topology.server, topology.server_address
    postgres = servers.PrivatePostgres(
        folder / "postgres", PG_PORT, listen="*", prefix=server.prefix()
    )
    redis = servers.PrivateRedis(
        folder / "redis", REDIS_PORT, bind="0.0.0.0", prefix=server.prefix(), client_host=here
    )
    processes: list[SiteProcess] = []
    try:
        postgres.start()
        postgres.create_database("courseware", host=here)
        redis.start()
        tokens = seed_database(
            site_environment(
                database_url=postgres.url("courseware", host=here), redis_url=redis.url()
            )
        )
        # On the server host, the site reaches its database and broker on loopback.
        web = web_server(
            site_environment(
                database_url=postgres.url("courseware"),
                redis_url=f"redis://127.0.0.1:{REDIS_PORT}/0",
                DJANGO_ALLOWED_HOSTS=here,
            ),
            f"0.0.0.0:{WEB_PORT}",
            folder / "web.log",
            prefix=server.prefix(),
        )
        processes.append(web)
        web.start()
        workers: dict[str, SiteProcess] = {}
        for slot, host in enumerate(topology.workers):
            env = site_environment(
                database_url=postgres.url("courseware", host=host.server_address)
                + f"?{CUT_OFF_NOTICED}",
                redis_url=f"redis://{host.server_address}:{REDIS_PORT}/0",
                FLEET_HEARTBEAT_S=str(HEARTBEAT_S),
                FLEET_GONE_AFTER_S=str(GONE_AFTER_S),
            )
            log = folder / f"{host.hostname}.log"
            workers[host.hostname] = grading_worker(env, slot, log, prefix=host.prefix())
            processes.append(workers[host.hostname])
            workers[host.hostname].start()

        base = f"http://{here}:{WEB_PORT}"
        assert wait_for(Browser(base).up, timeout=60), web.tail()
        for worker in workers.values():
            assert worker.wait_for_output(WORKER_READY, timeout=120), worker.tail()
        hosts = {host.hostname: host for host in topology.workers}
        truth = Truth(postgres.url("courseware", host=here))
        yield Cluster(topology, workers, hosts, truth, tokens, base, web)
    finally:
        for process in processes:
            process.kill()
        redis.kill()
        postgres.stop()
        topology.tear_down()
        servers.discard_folder(folder)


def test_a_worker_cut_off_mid_job_has_its_job_graded_by_the_other(cluster: Cluster) -> None:
    truth = cluster.truth
    long_job = Browser(cluster.base, token=cluster.tokens["alice"]).submit(SLOW)
    short_job = Browser(cluster.base, token=cluster.tokens["bob"]).submit(WRONG)

    # Spread: each worker took one (one job per worker at a time, prefetch one).
    def holders() -> dict[int, str] | None:
        rows = truth.rows(
            "SELECT id, claimed_by FROM submissions_submission WHERE id = ANY(%s) "
            "AND claimed_by <> ''",
            [long_job, short_job],
        )
        return {int(i): str(by) for i, by in rows} if len(rows) == 2 else None

    def long_job_running() -> bool:
        return truth.status(long_job) == "running"

    assert wait_for(long_job_running, timeout=120), cluster.logs()
    taken = wait_for(holders, timeout=120)
    assert taken, cluster.logs()
    cut_node = taken[long_job].split("@", 1)[1]
    other_node = taken[short_job].split("@", 1)[1]
    assert {cut_node, other_node} == set(cluster.hosts), taken

    cluster.hosts[cut_node].cut()  # mid-job: the slow one sleeps 8 s as it is imported
    assert truth.status(long_job) == "running"

    # The other worker grades its own job, then the cut-off one's, once that worker's heartbeat
    # is GONE_AFTER_S old.
    for submission in (short_job, long_job):
        status = wait_for(functools.partial(truth.finished, submission), timeout=300)
        assert status == "graded", f"submission {submission}: {status}\n{cluster.logs()}"
    [short_grading] = truth.gradings(short_job)
    [long_grading] = truth.gradings(long_job)
    assert long_grading["verdict"] == short_grading["verdict"] == "wrong"  # both really ran
    assert long_grading["worker"].startswith(f"{other_node}:"), long_grading
    lost = truth.rows("SELECT workers_lost FROM submissions_submission WHERE id = %s", long_job)
    assert lost == [(1,)]

    # The link comes back: the cut-off worker finishes its grading late, and its claim is gone,
    # so it writes nothing.
    cut_worker = cluster.workers[cut_node]
    before = len(cut_worker.output())
    cluster.hosts[cut_node].restore()
    finished = wait_for(
        lambda: re.search(
            r"Task graders\.grade_submission\[\S+\] succeeded", cut_worker.output()[before:]
        ),
        timeout=180,
    )
    assert finished, cluster.logs()
    assert len(truth.gradings(long_job)) == 1, truth.gradings(long_job)
    assert truth.status(long_job) == "graded"
