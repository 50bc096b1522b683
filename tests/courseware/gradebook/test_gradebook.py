"""The gradebook: best graded work per student and item, quizzes beside it, CSV export."""

from __future__ import annotations

import csv
import io

from django.test import Client

from courseware.submissions.models import Override
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders.report_schema import upgrade
from tests.conftest import Cast


def graded(cast: Cast, user, score: float, key: str):
    made = submission_create(user=user, exercise_slug="vector-add", code="def vector_add(a,b): ...")
    submission_claim(submission_id=made.pk)
    report = {"verdict": "correct", "score": score, "max_score": 10, "gradable": True}
    grading_record(
        submission_id=made.pk,
        report=upgrade(report),
        run_key=key,
        worker="w",
        duration_s=1,
    )
    return made


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_csv_has_each_students_best_score_and_overrides_win(cast: Cast) -> None:
    graded(cast, cast.alice, 6, "a1")
    graded(cast, cast.alice, 9, "a2")
    low = graded(cast, cast.bob, 3, "b1")
    Override.objects.create(submission=low, author=cast.tara, score=5, comment="partial")
    response = logged_in(cast.tara).get(f"/gradebook/{cast.offering.pk}/?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    by_name = {r["username"]: r for r in rows}
    assert by_name["alice"]["vector-add"] == "9.000"
    assert by_name["bob"]["vector-add"] == "5.000"
    assert by_name["(max)"]["vector-add"] == "10.000"
    assert "tara" not in by_name  # staff are not graded


def test_only_staff_of_the_offering_see_its_gradebook(cast: Cast) -> None:
    path = f"/gradebook/{cast.offering.pk}/"
    assert logged_in(cast.alice).get(path).status_code == 404
    assert logged_in(cast.stranger).get(path).status_code == 404
    page = logged_in(cast.ines).get(path).content.decode()
    assert "alice" in page and "vector-add" in page
    assert "Gradebook" in logged_in(cast.ines).get("/").content.decode()
    assert "Gradebook" not in logged_in(cast.alice).get("/").content.decode()
