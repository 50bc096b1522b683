"""Item statistics on a small made-up class: figures an instructor can check by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from courseware.courses.models import Enrolment, Item, Role
from courseware.instructor.statistics import exercise_statistics, quiz_statistics
from courseware.quizzes.models import Attempt, Question
from tests.conftest import Cast
from tests.courseware.instructor.conftest import graded, logged_in

pytestmark = pytest.mark.django_db

QUIZ = "ch15-gpu-fundamentals-quiz"


def carol(cast: Cast) -> User:
    user = User.objects.create_user(username="carol")
    Enrolment.objects.create(user=user, offering=cast.offering, role=Role.STUDENT)
    return user


def test_exercise_statistics_count_students_attempts_best_scores_and_verdicts(
    cast: Cast,
) -> None:
    carol(cast)  # a student who submitted nothing
    graded(cast.alice, score=4, verdict="wrong")
    graded(cast.alice, score=9)
    graded(cast.bob, score=6)
    graded(cast.tara, score=1, verdict="wrong")  # staff trying it out: not counted
    stats = exercise_statistics(offering=cast.offering, item=cast.item)
    assert (stats.students, stats.submitted, stats.attempts, stats.scored) == (3, 2, 3, 2)
    # Best scores 9 and 6 of 10 (scaled to the item's maximum).
    best = [Decimal(9), Decimal(6)]
    scale = cast.item.max_score / 10
    assert stats.mean_best == (sum(best) * scale / 2).quantize(Decimal("0.01"))
    assert [b.count for b in stats.histogram] == [0, 0, 0, 0, 0, 0, 1, 0, 0, 1]
    assert {verdict: n for verdict, _label, n in stats.verdicts} == {"correct": 2, "wrong": 1}
    page = statistics_page(cast, "vector-add")
    assert 'id="submitted">2 / 3<' in page and 'data-verdict="wrong"' in page


def attempt(user: User, question: Question, number: int, answer: object, right: bool) -> None:
    Attempt.objects.create(
        user=user,
        question=question,
        offering=Enrolment.objects.get(user=user).offering,
        number=number,
        raw_answer=str(answer),
        answer=answer,
        expected={},
        is_correct=right,
        attempt_factor=Decimal(1),
        score=question.points * ((Decimal(1) - Decimal("0.3") * (number - 1)) if right else 0),
        content_hash="x",
    )


def test_quiz_statistics_per_question_with_the_most_common_wrong_answers(cast: Cast) -> None:
    third = carol(cast)
    quiz = Item.objects.get(slug=QUIZ).quiz
    cores = quiz.questions.get(key="04-a100-cores-per-sm")  # numeric, fixed: 64
    design = quiz.questions.get(key="02-latency-vs-throughput")  # single choice
    attempt(cast.alice, cores, 1, 32, False)
    attempt(cast.alice, cores, 2, 64, True)
    attempt(cast.bob, cores, 1, 32, False)
    attempt(cast.bob, cores, 2, 128, False)
    attempt(third, cores, 1, 64, True)
    attempt(cast.alice, design, 1, ["latency"], False)
    attempt(cast.bob, design, 1, ["latency"], False)
    attempt(third, design, 1, ["branches"], False)
    attempt(cast.tara, design, 1, ["faster-cpu"], False)  # staff: not counted
    stats = quiz_statistics(offering=cast.offering, item=quiz.item, language="en")
    by_key = {q.key: q for q in stats.questions}
    numeric = by_key["04-a100-cores-per-sm"]
    assert (numeric.students, numeric.attempts, numeric.right_attempts) == (3, 5, 2)
    assert numeric.percent_right == 40
    # Best per student: alice 0.7 x points, bob 0, carol full points.
    points = cores.points
    assert numeric.mean_score == ((points * Decimal("0.7") + points) / 3).quantize(Decimal("0.01"))
    assert [(w.text, w.count) for w in numeric.wrong_answers] == [("32", 2), ("128", 1)]
    choice = by_key["02-latency-vs-throughput"]
    assert choice.percent_right == 0 and choice.attempts == 3
    assert [w.count for w in choice.wrong_answers] == [2, 1]
    assert choice.wrong_answers[0].text.startswith("Both minimise latency")
    assert by_key["01-training-years"].percent_right is None
    page = statistics_page(cast, QUIZ)
    assert "Both minimise latency" in page and "×2" in page


def statistics_page(cast: Cast, slug: str) -> str:
    url = reverse("instructor-statistics", args=[cast.offering.pk, slug])
    response = logged_in(cast.tara).get(url)
    assert response.status_code == 200
    return response.content.decode()
