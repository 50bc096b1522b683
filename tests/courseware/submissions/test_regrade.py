"""Regrading every submission of an exercise after its tests changed, and following it."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from courseware.submissions.models import RegradeBatch, Status, Submission
from courseware.submissions.services import grading_record, submission_claim, submission_create
from tests.conftest import Cast
from tests.courseware.submissions.test_notebook_review import logged_in, ta_of_another_offering
from tests.courseware.submissions.test_overrides_trail import REPORT


def graded(user, key: str) -> Submission:
    made = submission_create(user=user, exercise_slug="vector-add", code=f"x = '{key}'")
    submission_claim(submission_id=made.pk)
    grading_record(submission_id=made.pk, report=REPORT, run_key=key, worker="w", duration_s=1)
    return Submission.objects.get(pk=made.pk)


@pytest.fixture
def three(cast: Cast) -> tuple[Submission, Submission, Submission]:
    """Alice's older and newer submission and Bob's one, all graded."""
    return graded(cast.alice, "a1"), graded(cast.alice, "a2"), graded(cast.bob, "b1")


def start(cast: Cast, scope: str, captured) -> tuple[Any, Any]:
    with (
        mock.patch("courseware.submissions.services.current_app.send_task") as send,
        captured(execute=True),
    ):
        response = logged_in(cast.tara).post(
            "/review/regrade/",
            {"offering": cast.offering.pk, "exercise": "vector-add", "scope": scope},
        )
    return response, send


def test_regrading_the_latest_queues_each_students_newest_submission(
    cast: Cast, three, django_capture_on_commit_callbacks
) -> None:
    older, newer, bobs = three
    response, send = start(cast, "latest", django_capture_on_commit_callbacks)
    batch = RegradeBatch.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/review/regrade/{batch.pk}/"
    assert set(batch.submissions.all()) == {newer, bobs}
    assert sorted(call.kwargs["args"] for call in send.call_args_list) == [[newer.pk], [bobs.pk]]
    statuses = dict(Submission.objects.values_list("pk", "status"))
    assert statuses == {older.pk: Status.GRADED, newer.pk: Status.QUEUED, bobs.pk: Status.QUEUED}
    assert batch.requested_by == cast.tara and batch.offering == cast.offering


def test_regrading_all_queues_every_submission(
    cast: Cast, three, django_capture_on_commit_callbacks
) -> None:
    _response, send = start(cast, "all", django_capture_on_commit_callbacks)
    assert RegradeBatch.objects.get().submissions.count() == 3 and send.call_count == 3


def test_the_progress_counts_regraded_queued_and_running(cast: Cast, three) -> None:
    with mock.patch("courseware.submissions.services.current_app.send_task"):
        logged_in(cast.tara).post(
            "/review/regrade/",
            {"offering": cast.offering.pk, "exercise": "vector-add", "scope": "all"},
        )
    batch = RegradeBatch.objects.get()
    older, newer, _bobs = three
    submission_claim(submission_id=older.pk)
    grading_record(submission_id=older.pk, report=REPORT, run_key="re-a1", worker="w", duration_s=1)
    submission_claim(submission_id=newer.pk)

    progress = logged_in(cast.ines).get(f"/review/regrade/{batch.pk}/progress").json()
    assert progress == {"total": 3, "regraded": 1, "queued": 1, "running": 1, "done": False}
    page = logged_in(cast.tara).get(f"/review/regrade/{batch.pk}/").content.decode()
    assert "1 of 3 regraded, 1 queued, 1 running" in page
    assert f'href="/review/regrade/{batch.pk}/"' in page  # the reload link works without JS


def test_students_and_other_offerings_staff_cannot_regrade_or_watch(cast: Cast, three) -> None:
    for user in (cast.alice, cast.stranger):
        client = logged_in(user)
        assert client.get("/review/regrade/").status_code == 403
        response = client.post(
            "/review/regrade/",
            {"offering": cast.offering.pk, "exercise": "vector-add", "scope": "all"},
        )
        assert response.status_code == 403
    other = logged_in(ta_of_another_offering(cast))
    other.post(
        "/review/regrade/", {"offering": cast.offering.pk, "exercise": "vector-add", "scope": "all"}
    )
    assert RegradeBatch.objects.count() == 0
    with mock.patch("courseware.submissions.services.current_app.send_task"):
        logged_in(cast.tara).post(
            "/review/regrade/",
            {"offering": cast.offering.pk, "exercise": "vector-add", "scope": "all"},
        )
    batch = RegradeBatch.objects.get()
    assert other.get(f"/review/regrade/{batch.pk}/").status_code == 404
    assert other.get(f"/review/regrade/{batch.pk}/progress").status_code == 404
    assert logged_in(cast.alice).get(f"/review/regrade/{batch.pk}/progress").status_code == 404


def test_an_exercise_nobody_submitted_is_not_regraded(cast: Cast) -> None:
    response = logged_in(cast.tara).post(
        "/review/regrade/",
        {"offering": cast.offering.pk, "exercise": "vector-add", "scope": "latest"},
    )
    assert response.status_code == 200
    assert "there is nothing to regrade" in response.content.decode()
    assert RegradeBatch.objects.count() == 0
