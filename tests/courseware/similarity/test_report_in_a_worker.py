"""The similarity run through a real Celery worker process: the TA's request queues the task,
the worker compares, and the run's page ends with the copied pair ranked first.

In production the task goes to the staff-work queue (`lti`, which `make run`'s worker and the LTI
worker consume; the first test checks the route). The shared test worker consumes `cpu` only,
so the second test routes the task there, as tests/lti/test_passback_retry.py does."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from config.celery_app import app
from courseware.similarity.demo_solutions import CHUNKED, CHUNKED_DISGUISED, CLONE_THEN_ADD
from courseware.similarity.models import RunStatus, SimilarityRun
from courseware.similarity.tasks import similarity_run
from tests.celery_worker import Worker, purge_grading_queue, wait_for
from tests.conftest import make_cast
from tests.courseware.similarity.test_report import hand_in

pytestmark = pytest.mark.e2e


def test_the_route_is_the_staff_work_queue() -> None:
    route = app.amqp.router.route({}, "similarity.run")
    assert route["queue"].name == settings.LTI_PASSBACK_QUEUE


@pytest.fixture
def routed_to_the_test_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The task as run_start sends it, but to the `cpu` queue."""
    monkeypatch.setattr(
        similarity_run,
        "delay",
        lambda run_id: similarity_run.apply_async(args=(run_id,), queue="cpu"),
    )


def test_a_worker_runs_the_comparison_the_ta_asked_for(
    live_server, transactional_db, tmp_path: Path, routed_to_the_test_worker: None
) -> None:
    purge_grading_queue()  # nothing left from an earlier test
    cast = make_cast()
    hand_in(cast, "alice", CHUNKED)
    hand_in(cast, "bob", CHUNKED_DISGUISED)
    hand_in(cast, "stranger", CLONE_THEN_ADD)  # not enrolled as staff: a student's work
    ta = Client()
    ta.force_login(cast.tara)
    ta.post("/review/similarity/", {"offering": cast.offering.pk, "exercise": "vector-add"})
    run = SimilarityRun.objects.get()
    worker = Worker(tmp_path / "worker.log")
    worker.start()
    try:
        done = wait_for(
            lambda: ta.get(f"/review/similarity/{run.pk}/progress").json()["finished"], 120
        )
        assert done, worker.log()
    finally:
        worker.stop()
    run.refresh_from_db()
    assert (run.status, run.students, run.pairs_done, run.pairs_total) == (RunStatus.DONE, 3, 3, 3)
    top = run.pairs.first()
    assert top is not None and top.flagged
    assert {top.first.user.username, top.second.user.username} == {"alice", "bob"}
    assert run.pairs.filter(flagged=True).count() == 1
