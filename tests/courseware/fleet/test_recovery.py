"""Taking work back from lost workers: once, keeping its place; to a TA after the second loss;
a late result from a lost claim is thrown away; a message delivered twice grades once."""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone
from pytest_django.fixtures import Settings

from courseware.fleet import recovery
from courseware.fleet.models import Worker
from courseware.fleet.registry import worker_grading
from courseware.submissions.models import Grading, ReviewReason, Status, Submission
from courseware.submissions.selectors import review_queue_for
from courseware.submissions.services import (
    GradingJob,
    Holder,
    grading_record,
    submission_claim,
    submission_regrade,
)
from courseware.submissions.tasks import grade_submission
from tests.conftest import Cast
from tests.courseware.fleet.helpers import REPORT, identity, registered, silent_for, submit

SEND = "courseware.submissions.services.current_app.send_task"


@pytest.fixture(autouse=True)
def short_heartbeats(settings: Settings) -> None:
    settings.FLEET_GONE_AFTER_S = 30
    settings.SUBMISSIONS_WAKE_AFTER_S = 30


def claimed_by(name: str, submission: Submission, pid: int = 4242) -> GradingJob:
    job = submission_claim(submission_id=submission.pk, holder=Holder(name, pid))
    assert job is not None
    return job


def fresh(submission: Submission) -> Submission:
    return Submission.objects.get(pk=submission.pk)


def test_work_held_by_a_gone_worker_is_queued_again_and_a_worker_woken(cast: Cast) -> None:
    registered("cpu-0@node-a")
    registered("cpu-1@node-a", slot=1)
    lost = claimed_by("cpu-0@node-a", submit(cast.alice))
    kept = claimed_by("cpu-1@node-a", submit(cast.bob))
    silent_for("cpu-0@node-a", 31)
    with mock.patch(SEND) as send:
        assert recovery.reclaim_from_lost_workers() == 1
        assert recovery.reclaim_from_lost_workers() == 0  # noticed twice, acted on once
    send.assert_called_once_with("graders.grade_submission", args=[lost.submission_id], queue="cpu")
    row = Submission.objects.get(pk=lost.submission_id)
    assert (row.status, row.workers_lost, row.claim_token) == (Status.QUEUED, 1, "")
    assert Submission.objects.get(pk=kept.submission_id).status == Status.RUNNING


def test_a_worker_that_restarted_since_it_claimed_has_lost_that_claim(cast: Cast) -> None:
    registered("cpu-0@node-a")
    job = claimed_by("cpu-0@node-a", submit(cast.alice))
    Worker.objects.filter(name="cpu-0@node-a").update(
        started_at=timezone.now() + timedelta(seconds=1)
    )
    with mock.patch(SEND):
        assert recovery.reclaim_from_lost_workers() == 1
    assert Submission.objects.get(pk=job.submission_id).status == Status.QUEUED


def test_a_claim_naming_no_registered_worker_is_lost_only_once_it_is_old(cast: Cast) -> None:
    job = claimed_by("celery@somewhere", submit(cast.alice))
    with mock.patch(SEND):
        assert recovery.reclaim_from_lost_workers() == 0
        Submission.objects.filter(pk=job.submission_id).update(
            claimed_at=timezone.now() - timedelta(seconds=31)
        )
        assert recovery.reclaim_from_lost_workers() == 1


def test_work_of_a_dead_pool_process_is_taken_back_by_its_own_worker(cast: Cast) -> None:
    finished = subprocess.Popen(["true"])
    finished.wait()  # a pid that no longer runs
    me = identity("cpu-0@node-a")
    dead = claimed_by(me.name, submit(cast.alice), pid=finished.pid)
    alive = claimed_by(me.name, submit(cast.bob), pid=os.getpid())
    elsewhere = claimed_by("cpu-0@node-b", submit(cast.tara), pid=finished.pid)
    with mock.patch(SEND):
        assert recovery.reclaim_from_dead_processes(me) == 1
    assert Submission.objects.get(pk=dead.submission_id).status == Status.QUEUED
    assert Submission.objects.get(pk=alive.submission_id).status == Status.RUNNING
    # Another machine's pids mean nothing here: its own worker (or its heartbeat) decides.
    assert Submission.objects.get(pk=elsewhere.submission_id).status == Status.RUNNING


def test_after_losing_two_workers_a_submission_goes_to_a_ta(cast: Cast) -> None:
    registered("cpu-0@node-a")
    work = submit(cast.alice)
    with mock.patch(SEND) as send:
        for _loss in (1, 2):
            claimed_by("cpu-0@node-a", fresh(work))
            silent_for("cpu-0@node-a", 31)
            assert recovery.reclaim_from_lost_workers() == 1
            registered("cpu-0@node-a")  # it comes back, and may claim again
    assert send.call_count == 1  # woken after the first loss only
    row = fresh(work)
    assert (row.status, row.workers_lost) == (Status.NEEDS_REVIEW, 2)
    assert row.review_reason == ReviewReason.WORKERS_LOST
    assert submission_claim(submission_id=row.pk) is None  # no third worker
    assert list(review_queue_for(user=cast.tara)) == [row]
    client = cast.token_client(cast.tara)
    client.force_login(cast.tara)
    page = client.get("/review/").content.decode()
    assert "cut off twice by a lost worker" in page
    assert client.get(f"/submissions/{row.pk}/").status_code == 200
    student = cast.token_client(cast.alice).get(f"/api/v1/submissions/{row.pk}").json()
    assert student["status"] == "needs_review" and student["review_reason"] == "workers_lost"


def test_a_ta_regrade_gives_it_fresh_tries(cast: Cast) -> None:
    work = submit(cast.alice)
    Submission.objects.filter(pk=work.pk).update(
        status=Status.NEEDS_REVIEW, workers_lost=2, review_reason=ReviewReason.WORKERS_LOST
    )
    with mock.patch(SEND):
        assert submission_regrade(submission=fresh(work), requested_by=cast.tara)
    row = fresh(work)
    assert (row.status, row.workers_lost, row.review_reason) == (Status.QUEUED, 0, "")


def test_a_late_result_from_a_lost_claim_is_discarded(cast: Cast) -> None:
    registered("cpu-0@node-a")
    registered("cpu-1@node-a", slot=1)
    work = submit(cast.alice)
    late = claimed_by("cpu-0@node-a", work)
    silent_for("cpu-0@node-a", 31)
    with mock.patch(SEND):
        recovery.reclaim_from_lost_workers()
    current = claimed_by("cpu-1@node-a", fresh(work))

    def record(job: GradingJob, score: int) -> Grading | None:
        return grading_record(
            submission_id=job.submission_id,
            report={**REPORT, "score": score},
            run_key=job.claim_token,
            worker="w",
            duration_s=1,
            claim_token=job.claim_token,
        )

    assert record(late, 3) is None  # the silent worker finished after all: too late
    assert fresh(work).status == Status.RUNNING
    assert record(current, 10) is not None
    assert record(late, 3) is None
    assert [g.score for g in Grading.objects.filter(submission=work)] == [10]
    assert fresh(work).status == Status.GRADED


def test_the_same_message_delivered_twice_grades_once(cast: Cast) -> None:
    work = submit(cast.alice)
    with mock.patch("graders.grade", return_value=REPORT) as engine:
        for _delivery in (1, 2):
            grade_submission.apply(args=(work.pk,), task_id="one-message")
    engine.assert_called_once()
    assert engine.call_args.kwargs["device"] == "cpu"
    assert Grading.objects.filter(submission=work).count() == 1
    assert fresh(work).status == Status.GRADED


def test_an_idle_worker_wakes_itself_for_work_whose_message_was_lost(cast: Cast) -> None:
    me = identity("cpu-0@node-a")
    registered(me.name)
    waiting = submit(cast.alice)
    with mock.patch(SEND) as send:
        assert not recovery.wake_if_idle(me)  # queued just now: its message is on its way
        Submission.objects.filter(pk=waiting.pk).update(
            status_changed_at=timezone.now() - timedelta(seconds=31)
        )
        worker_grading(name=me.name, submission_id=submit(cast.bob).pk)
        assert not recovery.wake_if_idle(me)  # busy: it will look when it is done
        Worker.objects.filter(name=me.name).update(grading=None)
        assert recovery.wake_if_idle(me)
    send.assert_called_once_with("graders.grade_submission", args=[waiting.pk], queue="cpu")
