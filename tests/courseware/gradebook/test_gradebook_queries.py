"""The gradebook reads a fixed number of queries, however many students the class has.

Two offerings of one course, one with a single student and one with thirty, each student
with the same kinds of work: code submissions (one regraded, one late, one overridden on
some students), one waiting for review, a notebook with a hand-graded cell, and quiz attempts.
The selector, the page and the CSV must each cost the same number of queries for both, and
show the same scores as reading every submission on its own.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from courseware.courses.models import Enrolment, Item, ItemKind, ItemPolicy, Offering, Role
from courseware.gradebook.selectors import gradebook_for
from courseware.quizzes.models import Attempt, Question
from courseware.submissions.models import (
    ManualGrade,
    Override,
    Status,
    Submission,
)
from courseware.submissions.selectors import submission_effective_score
from tests.conftest import Cast
from tests.courseware.gradebook.builders import submit

NOTEBOOK_SLUG = "queries-notebook"


@dataclass
class Items:
    code: Item
    notebook: Item
    question: Question


def items_for(cast: Cast) -> Items:
    notebook = Item.objects.create(
        course=cast.item.course,
        kind=ItemKind.NOTEBOOK,
        slug=NOTEBOOK_SLUG,
        chapter="ch15",
        title_en="A notebook",
        source_path=f"ch15/{NOTEBOOK_SLUG}",
        content_hash="c" * 64,
        max_score=5,
        device_kinds=["cpu"],
        is_published=True,
    )
    question = Question.objects.filter(
        quiz__item__course=cast.item.course, quiz__item__is_published=True, is_active=True
    ).first()
    assert question is not None, "the course's content has a published quiz"
    return Items(code=cast.item, notebook=notebook, question=question)


def a_class(cast: Cast, items: Items, *, slug: str, students: int) -> Offering:
    """An offering of the course, its TA `tara`, and `students` students with work of each kind."""
    offering = Offering.objects.create(course=cast.item.course, slug=slug, title=slug)
    Enrolment.objects.create(user=cast.tara, offering=offering, role=Role.TA)
    ItemPolicy.objects.create(offering=offering, item=items.code, late_penalty_per_day="0.1")
    cells: list[dict[str, object]] = [
        {"grade_id": "auto", "score": 2, "max_score": 2},
        {"grade_id": "essay", "score": 0, "max_score": 3, "needs_manual_grade": True},
    ]
    for n in range(students):
        user = User.objects.create(username=f"{slug}-student-{n:02d}")
        Enrolment.objects.create(user=user, offering=offering, role=Role.STUDENT)
        submit(user, items.code, offering, scores=[4 + n % 5])
        regraded = submit(user, items.code, offering, scores=[3, 5 + n % 4])
        submit(user, items.code, offering, scores=[10], late_days=2)
        submit(user, items.code, offering, scores=[], status=Status.NEEDS_REVIEW)
        if n % 3 == 0:
            Override.objects.create(submission=regraded, author=cast.tara, score=Decimal("9.5"))
        notebook = submit(user, items.notebook, offering, scores=[2], cells=cells)
        ManualGrade.objects.create(submission=notebook, grade_id="essay", score=1, author=cast.tara)
        ManualGrade.objects.create(
            submission=notebook, grade_id="essay", score=2 + n % 2, author=cast.tara
        )
        for number, score in ((1, "0"), (2, str(items.question.points))):
            Attempt.objects.create(
                user=user,
                question=items.question,
                offering=offering,
                number=number,
                raw_answer="42",
                answer=42,
                expected=42,
                is_correct=score != "0",
                attempt_factor=1,
                score=score,
                content_hash="q" * 64,
            )
    return offering


def queries(read: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as captured:
        read()
    return len(captured)


def staff_get(cast: Cast, path: str) -> Callable[[], object]:
    client = Client()
    client.force_login(cast.tara)

    def get() -> object:
        response = client.get(path)
        assert response.status_code == 200
        return response

    return get


def test_the_gradebook_reads_as_many_queries_for_thirty_students_as_for_one(cast: Cast) -> None:
    items = items_for(cast)
    one = a_class(cast, items, slug="one", students=1)
    thirty = a_class(cast, items, slug="thirty", students=30)

    def selector(offering: Offering) -> Callable[[], object]:
        return lambda: gradebook_for(offering=Offering.objects.get(pk=offering.pk))

    counts = {
        "selector": (queries(selector(one)), queries(selector(thirty))),
        "page": (
            queries(staff_get(cast, f"/gradebook/{one.pk}/")),
            queries(staff_get(cast, f"/gradebook/{thirty.pk}/")),
        ),
        "csv": (
            queries(staff_get(cast, f"/gradebook/{one.pk}/canvas.csv")),
            queries(staff_get(cast, f"/gradebook/{thirty.pk}/canvas.csv")),
        ),
    }
    assert all(a == b for a, b in counts.values()), counts


def expected_best(user: User, item: Item) -> Decimal | None:
    """The slow way: every graded submission of the user read on its own."""
    best: Decimal | None = None
    for submission in Submission.objects.filter(user=user, item=item, status=Status.GRADED):
        score = submission_effective_score(submission, submission.current_grading)
        if score is not None and (best is None or score > best):
            best = score
    return best


def test_the_gradebook_shows_what_each_submission_read_alone_shows(cast: Cast) -> None:
    items = items_for(cast)
    offering = a_class(cast, items, slug="few", students=4)
    book = gradebook_for(offering=offering)
    quiz_slug = items.question.quiz.item.slug
    assert [row.username for row in book.rows] == [f"few-student-{n:02d}" for n in range(4)]
    for row in book.rows:
        user = User.objects.get(username=row.username)
        for item in (items.code, items.notebook):
            assert row.scores[item.slug] == expected_best(user, item), (row.username, item.slug)
        assert row.scores[quiz_slug] == items.question.points
        assert row.pending_review == 1
    # By hand, for the record: the late 10 less 2 days at 10% (8) is the best code score but
    # where a TA's override of 9.5 beats it; the notebook is 2 autograded + the latest hand grade.
    assert [row.scores[items.code.slug] for row in book.rows] == [
        Decimal("9.5"),
        Decimal("8.000"),
        Decimal("8.000"),
        Decimal("9.5"),
    ]
    assert [row.scores[NOTEBOOK_SLUG] for row in book.rows] == [
        Decimal("4.000"),
        Decimal("5.000"),
        Decimal("4.000"),
        Decimal("5.000"),
    ]

    response = staff_get(cast, f"/gradebook/{offering.pk}/canvas.csv")()
    assert hasattr(response, "content")
    reader = csv.DictReader(io.StringIO(response.content.decode()))
    rows = {r["SIS User ID"]: r for r in reader}
    code, notebook = items.code.title_en, items.notebook.title_en
    # Rounded for Canvas: two decimals at most, with a dot.
    assert rows["few-student-00"][code] == "9.5"
    assert rows["few-student-01"][code] == "8"
    assert rows["few-student-01"][notebook] == "5"
