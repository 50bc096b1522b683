"""Staff work: the review queue, hand-graded cells, overrides and regrades."""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import Client

from courseware.submissions.models import Grading, ManualGrade, Status, Submission
from courseware.submissions.selectors import submission_as_api
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders.report.schema import upgrade
from tests.conftest import Cast

NOTEBOOK_REPORT = {
    "verdict": "correct",
    "gradable": True,
    "score": 3.0,
    "max_score": 5.0,
    "needs_manual_grade": True,
    "flags": [],
    "cells": [
        {"grade_id": "fused", "score": 3.0, "max_score": 3.0, "needs_manual_grade": False},
        {"grade_id": "explain", "score": None, "max_score": 2.0, "needs_manual_grade": True},
    ],
}


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def waiting(cast: Cast) -> Submission:
    """Alice's submission, autograded, with one cell waiting for a person."""
    made = submission_create(
        user=cast.alice, exercise_slug="vector-add", code="def vector_add(a, b): return a + b"
    )
    submission_claim(submission_id=made.pk)
    grading_record(
        submission_id=made.pk,
        report=upgrade(NOTEBOOK_REPORT),
        run_key="k1",
        worker="w",
        duration_s=1,
    )
    return Submission.objects.get(pk=made.pk)


def test_the_queue_lists_what_waits_for_this_offerings_staff(cast: Cast, waiting) -> None:
    assert waiting.status == Status.NEEDS_REVIEW
    page = logged_in(cast.tara).get("/review/").content.decode()
    assert f"/submissions/{waiting.pk}/" in page and "alice" in page
    assert f"/submissions/{waiting.pk}/" not in logged_in(cast.bob).get("/review/").content.decode()


def test_a_ta_scores_a_cell_and_the_total_changes(cast: Cast, waiting) -> None:
    before = submission_as_api(waiting, for_staff=False)
    assert before["score"] == 3.0
    response = logged_in(cast.tara).post(
        f"/submissions/{waiting.pk}/manual-grade",
        {"grade_id": "explain", "score": "1.5", "comment": "Name the kernels you saw."},
    )
    assert response.status_code == 302
    after = Submission.objects.get(pk=waiting.pk)
    assert after.status == Status.GRADED
    view = submission_as_api(after, for_staff=False)
    assert view["score"] == 4.5
    explain = next(c for c in view["report"]["cells"] if c["grade_id"] == "explain")
    assert explain["comment"] == "Name the kernels you saw." and explain["score"] == 1.5
    page = logged_in(cast.alice).get(f"/submissions/{waiting.pk}/").content.decode()
    assert "Name the kernels you saw." in page


def test_a_cell_score_out_of_range_or_not_a_number_is_refused(cast: Cast, waiting) -> None:
    client = logged_in(cast.tara)
    for score in ("9", "-1", "lots"):
        response = client.post(
            f"/submissions/{waiting.pk}/manual-grade",
            {"grade_id": "explain", "score": score},
            follow=True,
        )
        assert response.status_code == 200
    client.post(f"/submissions/{waiting.pk}/manual-grade", {"grade_id": "fused", "score": "1"})
    assert ManualGrade.objects.count() == 0
    assert Submission.objects.get(pk=waiting.pk).status == Status.NEEDS_REVIEW


def test_students_cannot_grade_override_or_regrade(cast: Cast, waiting) -> None:
    client = logged_in(cast.alice)
    for action, data in (
        ("manual-grade", {"grade_id": "explain", "score": "2"}),
        ("override", {"score": "5"}),
        ("regrade", {}),
    ):
        assert client.post(f"/submissions/{waiting.pk}/{action}", data).status_code == 404
    assert ManualGrade.objects.count() == 0 and waiting.overrides.count() == 0


def test_an_override_and_a_regrade_keep_history(cast: Cast, waiting) -> None:
    client = logged_in(cast.ines)
    client.post(f"/submissions/{waiting.pk}/override", {"score": "4", "comment": "fair"})
    assert submission_as_api(Submission.objects.get(pk=waiting.pk), for_staff=True)["score"] == 4
    with mock.patch("courseware.submissions.services.current_app.send_task"):
        client.post(f"/submissions/{waiting.pk}/regrade")
    assert Submission.objects.get(pk=waiting.pk).status == Status.QUEUED
    assert Grading.objects.filter(submission=waiting).count() == 1  # the old grading stays
