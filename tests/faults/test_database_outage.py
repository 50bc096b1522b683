"""PostgreSQL unreachable for a while: the site says so, the worker waits, nothing is lost.

Real processes: gunicorn and a Celery worker reach a private PostgreSQL only through a TCP proxy,
which the test cuts while the worker is grading and a student opens pages, then restores.
"""

from __future__ import annotations

import re

import pytest

from courseware.outage import RETRY_AFTER_S
from tests.faults.single_host import Site
from tests.faults.stack import SLOW, Browser, wait_for

pytestmark = pytest.mark.e2e

RETRYING = r"Database unavailable while recording the grading of submission {id}\b"
ANSWERED = r"Database answered again while recording the grading of submission {id}\b"


def test_an_outage_mid_grading_shows_a_503_and_the_grading_lands_once_it_returns(
    site: Site,
) -> None:
    site.start_worker()
    alice = site.student("alice")
    page = Browser(site.base)
    page.log_in("alice", "pw-alice")
    chinese = Browser(site.base, language="zh-hans")
    chinese.log_in("bob", "pw-bob")

    submission = alice.submit(SLOW)
    assert wait_for(lambda: site.truth.status(submission) == "running", timeout=120), site.logs()

    site.proxy.cut()  # the worker holds the job; PostgreSQL is now out of everyone's reach
    try:
        dashboard = page.get("/")
        assert dashboard.status == 503, dashboard.body[:500]
        assert "briefly unavailable" in dashboard.body and "safe" in dashboard.body
        assert dashboard.headers["Retry-After"] == str(RETRY_AFTER_S)
        assert "Traceback" not in dashboard.body and "OperationalError" not in dashboard.body

        zh = chinese.get(f"/submissions/{submission}/")
        assert zh.status == 503 and "课程网站暂时无法访问" in zh.body, zh.body[:500]

        api = alice.get(f"/api/v1/submissions/{submission}")
        assert api.status == 503 and api.headers["Retry-After"] == str(RETRY_AFTER_S)
        assert "database" in api.json()["error"]

        # The engine finishes without the database; recording the result is what must wait.
        waiting = site.worker.wait_for_output(RETRYING.format(id=submission), timeout=180)
        assert waiting, site.logs()
        assert site.truth.status(submission) == "running"  # nothing marked failed meanwhile
    finally:
        site.proxy.restore()

    assert site.worker.wait_for_output(ANSWERED.format(id=submission), timeout=60), site.logs()
    assert wait_for(lambda: site.truth.finished(submission), timeout=60) == "graded"
    [grading] = site.truth.gradings(submission)
    assert grading["verdict"] == "wrong" and grading["gradable"], grading  # it really ran
    assert not re.search(rf"Grading submission {submission} failed", site.worker.output())

    # And the site is back by itself: the same pages answer again.
    assert page.get("/").status == 200
    assert alice.get(f"/api/v1/submissions/{submission}").json()["status"] == "graded"
