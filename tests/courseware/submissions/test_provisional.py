"""Provisional points: marked where people read scores, then replaced by a quiet grading.

The reports are the engine's, with the ``load`` block a busy grading writes
(graders/measure/load.py); the decision itself is tested in tests/graders/test_machine_load.py.
"""

from __future__ import annotations

import copy
from typing import Any
from unittest import mock

import pytest

from courseware.gradebook.selectors import gradebook_for
from courseware.gradebook.table import cell_marks
from courseware.submissions import provisional
from courseware.submissions.models import Grading, Status, Submission
from courseware.submissions.selectors import grading_budget_for
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders.report.schema import upgrade
from graders.report.types import LoadReport, Report
from tests.conftest import Cast
from tests.courseware.submissions.test_report_page import page_of, sample


def load_block(*, busy: bool) -> LoadReport:
    """The report's ``load`` block of a grading disturbed twice (busy) or timed again once."""
    return {
        "bus_canary": [0.74, 0.71] if busy else [0.98, 0.99],
        "stalled_calls_retaken": 6,
        "stalled_calls_kept": 2 if busy else 0,
        "detected": ["the memory bus was shared"] if busy else [],
        "action": "provisional" if busy else "remeasured",
        "measured_twice": True,
        "provisional": busy,
        "explanation": "…",
    }


def with_load(report: dict[str, Any], *, is_provisional: bool, score: float) -> Report:
    report = copy.deepcopy(report)
    report["score"] = score
    report["load"] = load_block(busy=is_provisional)
    return upgrade(report)


def record(
    submission: Submission, report: Report, key: str, duration_s: float = 1
) -> Grading | None:
    submission_claim(submission_id=submission.pk)
    return grading_record(
        submission_id=submission.pk, report=report, run_key=key, worker="w", duration_s=duration_s
    )


@pytest.fixture
def scheduled() -> Any:
    with mock.patch.object(provisional, "schedule") as schedule:
        yield schedule


def busy_grading(cast: Cast, score: float = 8.1, code: str = "x = 1") -> Submission:
    made = submission_create(user=cast.alice, exercise_slug="vector-add", code=code)
    record(made, with_load(sample("fast"), is_provisional=True, score=score), f"busy-{made.pk}")
    return Submission.objects.get(pk=made.pk)


def test_a_provisional_grading_is_kept_marked_and_followed_by_another(
    cast: Cast, scheduled: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        submission = busy_grading(cast)
    grading = submission.current_grading
    assert grading is not None and grading.provisional and submission.status == Status.GRADED
    scheduled.assert_called_once_with(
        submission.pk, queue=submission.device_kind, countdown=provisional.retry_after_s()[0]
    )
    cell = gradebook_for(offering=cast.offering).rows[0].cells["vector-add"]
    assert cell.score is not None and cell.provisional
    assert "provisional" in [mark.name for mark in cell_marks(cell)]


def test_a_quiet_grading_follows_with_nothing(
    cast: Cast, scheduled: Any, django_capture_on_commit_callbacks: Any
) -> None:
    made = submission_create(user=cast.alice, exercise_slug="vector-add", code="x = 1")
    with django_capture_on_commit_callbacks(execute=True):
        grading = record(made, with_load(sample("fast"), is_provisional=False, score=9.2), "q")
    assert grading is not None and not grading.provisional
    scheduled.assert_not_called()


def test_the_quiet_regrade_replaces_the_provisional_points(
    cast: Cast, scheduled: Any, django_capture_on_commit_callbacks: Any
) -> None:
    submission = busy_grading(cast, score=8.1)
    with (
        mock.patch("courseware.submissions.services.current_app.send_task") as send,
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert provisional.regrade_if_still_provisional(submission.pk) == "queued"
    assert send.call_args.kwargs["args"] == [submission.pk]
    assert Submission.objects.get(pk=submission.pk).status == Status.QUEUED
    record(submission, with_load(sample("fast"), is_provisional=False, score=9.3), "quiet")
    cell = gradebook_for(offering=cast.offering).rows[0].cells["vector-add"]
    assert str(cell.score) == "9.300" and not cell.provisional
    # The history keeps the provisional grading; the task finds nothing left to do.
    assert [g.provisional for g in Grading.objects.filter(submission=submission)] == [False, True]
    assert provisional.regrade_if_still_provisional(submission.pk) == "settled"


def test_a_provisional_submission_steps_back_while_others_wait(cast: Cast, scheduled: Any) -> None:
    submission = busy_grading(cast)
    scheduled.reset_mock()
    submission_create(user=cast.bob, exercise_slug="vector-add", code="y = 2")  # queued
    assert provisional.regrade_if_still_provisional(submission.pk) == "stepped_back"
    scheduled.assert_called_once_with(
        submission.pk, queue=submission.device_kind, countdown=provisional.STEP_BACK_S
    )
    assert Submission.objects.get(pk=submission.pk).status == Status.GRADED


def test_patience_is_bounded(
    cast: Cast, scheduled: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        submission = busy_grading(cast)
    for attempt in range(provisional.TRIES):
        Submission.objects.filter(pk=submission.pk).update(status=Status.QUEUED)
        with django_capture_on_commit_callbacks(execute=True):
            record(
                submission, with_load(sample("fast"), is_provisional=True, score=8), f"b{attempt}"
            )
    countdowns = [call.kwargs["countdown"] for call in scheduled.call_args_list]
    assert countdowns == list(provisional.retry_after_s())  # the last busy grading adds none
    html = page_of(cast.alice, submission)
    assert 'id="provisional"' in html and "a TA can grade it again" in html


def test_the_report_page_says_so_in_both_languages(cast: Cast, scheduled: Any) -> None:
    submission = busy_grading(cast)
    english = page_of(cast.alice, submission)
    banner = english[english.index('id="provisional"') :]
    assert "Provisional" in banner and "graded again by itself once the worker is quiet" in banner
    table = english[english.index('id="load"') :]
    assert "74 %, 71 %" in table and "6 timed again, 2 scored anyway" in table
    chinese = page_of(cast.alice, submission, "zh-hans")
    assert "暂定" in chinese[chinese.index('id="provisional"') :]
    assert "内存总线" in chinese


def regraded(submission: Submission, *, busy: bool, key: str, duration_s: float = 1) -> None:
    """The worker's regrade of ``submission``: queued again, then graded."""
    Submission.objects.filter(pk=submission.pk).update(status=Status.QUEUED)
    record(submission, with_load(sample("fast"), is_provisional=busy, score=9), key, duration_s)


def test_automatic_regrades_count_against_the_students_grading_time(
    cast: Cast, scheduled: Any, settings: Any
) -> None:
    """Issue 38, class 4: each provisional grading bought four regrades that cost the student
    nothing. They are the student's load on the workers: they count, as a first grading does."""
    settings.GRADING_SECONDS_PER_DAY = 3600
    submission = busy_grading(cast)
    assert budget_used(cast) == 1
    regraded(submission, busy=True, key="auto-1", duration_s=20)
    regraded(submission, busy=False, key="auto-2", duration_s=300)
    assert budget_used(cast) == 321
    # A regrade after a grading that was not provisional is not the automatic kind: free.
    regraded(submission, busy=False, key="asked", duration_s=50)
    assert budget_used(cast) == 321


def budget_used(cast: Cast) -> float:
    budget = grading_budget_for(user=cast.alice)
    assert budget is not None
    return budget.used_s


def test_no_automatic_regrade_once_the_budget_is_spent(
    cast: Cast, scheduled: Any, settings: Any
) -> None:
    settings.GRADING_SECONDS_PER_DAY = 1
    submission = busy_grading(cast)  # its grading took 1 s: the day's time is spent
    with mock.patch("courseware.submissions.services.current_app.send_task") as send:
        assert provisional.regrade_if_still_provisional(submission.pk) == "over_budget"
    send.assert_not_called()
    assert Submission.objects.get(pk=submission.pk).status == Status.GRADED
    settings.GRADING_SECONDS_PER_DAY = 3600
    with mock.patch("courseware.submissions.services.current_app.send_task"):
        assert provisional.regrade_if_still_provisional(submission.pk) == "queued"


def test_a_students_provisional_submissions_are_regraded_one_at_a_time(
    cast: Cast, scheduled: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Sending many files that go provisional must not multiply the regrades: the oldest
    waiting one is regraded, the others wait and follow when it settles."""
    with django_capture_on_commit_callbacks(execute=True):
        first = busy_grading(cast, code="x = 1")
        second = busy_grading(cast, code="x = 2")
        third = busy_grading(cast, code="x = 3")
    assert [call.args[0] for call in scheduled.call_args_list] == [first.pk]
    assert provisional.waiting_for_regrade(cast.alice.pk) == [first.pk, second.pk, third.pk]
    assert provisional.regrade_if_still_provisional(second.pk) == "waits"
    # Still busy: the first keeps the turn and schedules its next try, nothing else.
    with django_capture_on_commit_callbacks(execute=True):
        regraded(first, busy=True, key="first-2")
    assert [call.args[0] for call in scheduled.call_args_list] == [first.pk, first.pk]
    # Settled: the turn passes to the second, and only to it.
    with django_capture_on_commit_callbacks(execute=True):
        regraded(first, busy=False, key="first-3")
    assert [call.args[0] for call in scheduled.call_args_list] == [first.pk, first.pk, second.pk]
    assert scheduled.call_args.kwargs["countdown"] == provisional.retry_after_s()[0]
    assert provisional.waiting_for_regrade(cast.alice.pk) == [second.pk, third.pk]
    # Another student's provisional submission is not held back by Alice's.
    with django_capture_on_commit_callbacks(execute=True):
        made = submission_create(user=cast.bob, exercise_slug="vector-add", code="y = 1")
        record(made, with_load(sample("fast"), is_provisional=True, score=8), "bob")
    assert scheduled.call_args.args[0] == made.pk
