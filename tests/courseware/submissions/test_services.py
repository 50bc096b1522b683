"""The submission workflow: claims, gradings, regrades, failures and the stale sweep."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from courseware.submissions.models import Grading, Override, Status, Submission
from courseware.submissions.selectors import submission_as_api
from courseware.submissions.services import (
    grading_record,
    submission_claim,
    submission_create,
    submission_mark_failed,
    submission_regrade,
    submission_requeue_stale,
)
from graders.report.schema import upgrade
from graders.report.types import Report
from tests.conftest import Cast

CODE = "def vector_add(a, b):\n    return a + b\n"
REPORT = upgrade(
    {
        "exercise": "vector-add",
        "exercise_hash": "h",
        "verdict": "correct",
        "score": 10,
        "max_score": 10,
        "gradable": True,
        "flags": [],
    }
)


def make(cast: Cast) -> Submission:
    return submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)


def test_only_one_claim_of_a_submission_wins(cast: Cast) -> None:
    submission = make(cast)
    assert submission_claim(submission_id=submission.pk) is not None
    assert submission_claim(submission_id=submission.pk) is None
    assert Submission.objects.get(pk=submission.pk).status == Status.RUNNING


def test_a_delivery_recorded_twice_writes_one_grading(cast: Cast) -> None:
    submission = make(cast)
    submission_claim(submission_id=submission.pk)
    first = grading_record(
        submission_id=submission.pk,
        report=REPORT,
        run_key="task-1",
        worker="w",
        duration_s=1,
    )
    again = grading_record(
        submission_id=submission.pk,
        report=REPORT,
        run_key="task-1",
        worker="w",
        duration_s=1,
    )
    assert first is not None and again is None
    assert Grading.objects.filter(submission=submission).count() == 1


def test_flags_send_a_submission_to_a_person(cast: Cast) -> None:
    submission = make(cast)
    submission_claim(submission_id=submission.pk)
    flagged: Report = {**REPORT, "flags": ["implausible_speed"]}
    grading_record(
        submission_id=submission.pk,
        report=flagged,
        run_key="k",
        worker="w",
        duration_s=1,
    )
    assert Submission.objects.get(pk=submission.pk).status == Status.NEEDS_REVIEW


def test_a_regrade_keeps_the_history(cast: Cast) -> None:
    submission = make(cast)
    submission_claim(submission_id=submission.pk)
    grading_record(
        submission_id=submission.pk,
        report={**REPORT, "score": 7},
        run_key="a",
        worker="w",
        duration_s=1,
    )
    with mock.patch("courseware.submissions.services.current_app.send_task"):
        assert submission_regrade(submission=submission, requested_by=cast.tara)
    assert not submission_regrade(submission=submission, requested_by=cast.tara)  # already queued
    assert submission_claim(submission_id=submission.pk) is not None
    grading_record(
        submission_id=submission.pk, report=REPORT, run_key="b", worker="w", duration_s=1
    )
    scores = list(Grading.objects.filter(submission=submission).values_list("score", flat=True))
    assert sorted(float(s) for s in scores if s is not None) == [7.0, 10.0]
    assert (
        submission_as_api(Submission.objects.get(pk=submission.pk), for_staff=False)["score"] == 10
    )


def test_an_override_wins_over_the_grading(cast: Cast) -> None:
    submission = make(cast)
    submission_claim(submission_id=submission.pk)
    grading_record(
        submission_id=submission.pk,
        report=REPORT,
        run_key="a",
        worker="w",
        duration_s=1,
    )
    Override.objects.create(submission=submission, author=cast.tara, score=4, comment="copied")
    assert submission_as_api(Submission.objects.get(pk=submission.pk), for_staff=True)["score"] == 4


def test_a_grader_failure_is_recorded_without_blame(cast: Cast) -> None:
    submission = make(cast)
    submission_claim(submission_id=submission.pk)
    submission_mark_failed(submission_id=submission.pk, run_key="t", reason="Traceback: boom")
    refreshed = Submission.objects.get(pk=submission.pk)
    assert refreshed.status == Status.FAILED
    student_view = submission_as_api(refreshed, for_staff=False)
    assert "costs you nothing" in student_view["report"]["message"]
    assert "internal_error" not in student_view["report"]  # tracebacks stay with the staff
    assert "boom" in submission_as_api(refreshed, for_staff=True)["report"]["internal_error"]


def test_a_submission_never_changes_once_made(cast: Cast) -> None:
    submission = make(cast)
    submission.source = "def vector_add(a, b):\n    return b + a\n"
    with pytest.raises(ValidationError):
        submission.save()
    assert Submission.objects.get(pk=submission.pk).source == CODE


def test_the_sweep_requeues_work_a_lost_worker_left(cast: Cast) -> None:
    stuck = make(cast)
    submission_claim(submission_id=stuck.pk)
    fresh = make(cast)
    long_ago = timezone.now() - timedelta(hours=2)
    Submission.objects.filter(pk=stuck.pk).update(status_changed_at=long_ago)
    with mock.patch("courseware.submissions.services.current_app.send_task") as send:
        assert submission_requeue_stale(older_than_s=600) == 1
    send.assert_called_once_with("graders.grade_submission", args=[stuck.pk], queue="cpu")
    assert Submission.objects.get(pk=stuck.pk).status == Status.QUEUED
    assert Submission.objects.get(pk=fresh.pk).status == Status.QUEUED


def test_a_broker_outage_leaves_the_submission_saved_and_queued(cast: Cast) -> None:
    with mock.patch(
        "courseware.submissions.services.current_app.send_task", side_effect=ConnectionError("down")
    ):
        from courseware.submissions.services import submission_enqueue

        submission = make(cast)
        submission_enqueue(submission_id=submission.pk, queue="cpu")  # logs, does not raise
    assert Submission.objects.get(pk=submission.pk).status == Status.QUEUED
