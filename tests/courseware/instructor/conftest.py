"""Helpers for the instructor pages' tests: a logged-in client, a TA of another course, and
a graded submission made through the real services."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from courseware.courses.models import Course, Enrolment, Offering, Role
from courseware.submissions.models import Submission
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders.report.schema import upgrade
from tests.conftest import Cast

CODE = "def vector_add(a, b):\n    return a + b\n"


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def ta_of_another_course() -> User:
    course = Course.objects.create(slug="other-course", title="Another course")
    offering = Offering.objects.create(course=course, slug="2026-fall", title="Other, fall")
    tina = User.objects.create_user(username="tina", password="pw-tina")
    Enrolment.objects.create(user=tina, offering=offering, role=Role.TA)
    return tina


def graded(
    user: User, *, score: float, verdict: str = "correct", slug: str = "vector-add"
) -> Submission:
    """A submission of `user`, graded with `score` out of 10 through the real services."""
    submission = submission_create(user=user, exercise_slug=slug, code=CODE)
    submission_claim(submission_id=submission.pk)
    report = {"verdict": verdict, "score": score, "max_score": 10, "gradable": True, "flags": []}
    grading_record(
        submission_id=submission.pk,
        report=upgrade(report),
        run_key=f"run-{submission.pk}",
        worker="w",
        duration_s=1,
    )
    return submission


@pytest.fixture
def tina(cast: Cast) -> User:
    return ta_of_another_course()
