"""Answering: each question type, attempt scores, limits, deadlines, and the gradebook read."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from courseware.courses.models import Item, ItemPolicy
from courseware.quizzes.models import Attempt, QuizSettings
from courseware.quizzes.selectors import quiz_scores_for
from courseware.quizzes.short_spec import short_points
from courseware.refusals import Refused
from tests.conftest import Cast
from tests.courseware.quizzes.conftest import SLUG, answer, right_answer, variant


def refused(user: User, key: str, value: object, status: int) -> str:
    with pytest.raises(Refused) as caught:
        answer(user, key, value)
    assert caught.value.status_code == status
    return caught.value.message


def test_sync_made_the_quiz_an_item_with_its_questions(cast: Cast) -> None:
    item = Item.objects.get(slug=SLUG)
    assert item.kind == "quiz" and item.is_published
    assert item.quiz.questions.count() >= 25
    # The hand-graded short answers (short/*.toml) count too (test_short_answers.py).
    short = short_points(settings.GRADERS_EXERCISES_ROOT / "ch15" / "quiz")
    assert item.max_score == sum(q.points for q in item.quiz.questions.all()) + short


def test_a_parameterized_numeric_answer_is_graded_on_the_students_own_numbers(cast: Cast) -> None:
    typed = right_answer(cast.alice, "18-layernorm-memory-time")
    attempt = answer(cast.alice, "18-layernorm-memory-time", typed)
    assert attempt.is_correct and attempt.score == Decimal("1.000")
    assert attempt.raw_answer == typed and attempt.number == 1
    assert attempt.variables == variant(cast.alice, "18-layernorm-memory-time")
    assert attempt.expected["unit"] == "us"


def test_units_and_prefixes_are_converted_before_grading(cast: Cast) -> None:
    assert answer(cast.alice, "19-layernorm-chapter-example", "0.033 ms").is_correct
    assert answer(cast.bob, "19-layernorm-chapter-example", "33 µs").is_correct


def test_students_get_different_variants(cast: Cast) -> None:
    keys = ["17-layernorm-ai", "18-layernorm-memory-time", "22-vector-add-time", "23-gemm-flops"]
    assert any(variant(cast.alice, k) != variant(cast.bob, k) for k in keys)


def test_a_variant_is_stable_and_changes_with_the_attempt_and_the_secret(cast: Cast) -> None:
    key = "18-layernorm-memory-time"
    first = variant(cast.alice, key)
    assert variant(cast.alice, key) == first
    assert any(variant(cast.alice, key, attempt=n) != first for n in range(2, 6))
    with override_settings(SECRET_KEY="another-secret-key-for-this-test-only-0123456789"):
        other = [variant(cast.alice, key, attempt=n) for n in range(1, 4)]
    assert other != [variant(cast.alice, key, attempt=n) for n in range(1, 4)]


def test_each_attempt_earns_less_and_a_solved_question_takes_no_more(cast: Cast) -> None:
    key = "04-a100-cores-per-sm"
    assert not answer(cast.alice, key, "128").is_correct
    assert not answer(cast.alice, key, "32").is_correct
    third = answer(cast.alice, key, "64")
    assert third.is_correct and third.number == 3 and third.score == Decimal("0.500")
    assert "already answered" in refused(cast.alice, key, "64", 409)


def test_the_second_attempt_earns_seventy_percent(cast: Cast) -> None:
    answer(cast.alice, "14-ai-two-on-a100", "compute")
    assert answer(cast.alice, "14-ai-two-on-a100", "memory").score == Decimal("0.700")


def test_attempts_run_out(cast: Cast) -> None:
    for _ in range(3):
        answer(cast.alice, "04-a100-cores-per-sm", "128")
    assert "used all 3 attempts" in refused(cast.alice, "04-a100-cores-per-sm", "64", 403)


def test_a_malformed_answer_costs_no_attempt(cast: Cast) -> None:
    assert "decimal point" in refused(cast.alice, "04-a100-cores-per-sm", "1,5", 400)
    assert "not a number" in refused(cast.alice, "04-a100-cores-per-sm", "sixty-four", 400)
    assert "a time" in refused(cast.alice, "19-layernorm-chapter-example", "33 GB", 400)
    assert "not a choice" in refused(cast.alice, "14-ai-two-on-a100", "z", 400)
    assert "as a list" in refused(cast.alice, "12-memory-bound-ops", 7, 400)
    assert "at least one" in refused(cast.alice, "12-memory-bound-ops", [], 400)
    assert "one choice" in refused(cast.alice, "14-ai-two-on-a100", ["memory"], 400)
    assert Attempt.objects.count() == 0
    assert answer(cast.alice, "04-a100-cores-per-sm", 64).number == 1


def test_multiple_choice_is_all_or_nothing(cast: Cast) -> None:
    assert not answer(cast.alice, "12-memory-bound-ops", ["softmax", "layernorm"]).is_correct
    assert answer(
        cast.alice, "12-memory-bound-ops", ["softmax", "layernorm", "gelu", "add"]
    ).is_correct
    assert not answer(
        cast.bob, "12-memory-bound-ops", ["softmax", "layernorm", "gelu", "add", "gemm"]
    ).is_correct


def test_a_parameterized_single_choice_follows_the_drawn_observation(cast: Cast) -> None:
    key = "31-profiling-checklist"
    right = right_answer(cast.alice, key)
    assert answer(cast.alice, key, right).is_correct
    wrong = "batch" if right_answer(cast.bob, key) != "batch" else "fuse"
    assert not answer(cast.bob, key, wrong).is_correct


def test_strangers_and_unknown_questions_are_refused(cast: Cast) -> None:
    assert "not enrolled" in refused(cast.stranger, "04-a100-cores-per-sm", "64", 403)
    assert "no question" in refused(cast.alice, "no-such-question", "64", 404)
    with pytest.raises(Refused) as caught:
        from courseware.quizzes.services import attempt_create

        attempt_create(user=cast.alice, quiz_slug="no-such-quiz", question_key="x", answer="1")
    assert caught.value.status_code == 404


def policy(cast: Cast, **fields: Any) -> ItemPolicy:
    return ItemPolicy.objects.create(
        offering=cast.offering, item=Item.objects.get(slug=SLUG), **fields
    )


def test_nothing_is_taken_before_the_quiz_opens_or_after_it_closes(cast: Cast) -> None:
    p = policy(cast, opens_at=timezone.now() + timedelta(days=1))
    assert "opens on" in refused(cast.alice, "04-a100-cores-per-sm", "64", 403)
    p.opens_at, p.due_at = None, timezone.now() - timedelta(hours=1)
    p.save()
    assert "deadline" in refused(cast.alice, "04-a100-cores-per-sm", "64", 403)
    assert Attempt.objects.count() == 0


def test_a_late_answer_loses_the_penalty_per_day(cast: Cast) -> None:
    policy(
        cast,
        due_at=timezone.now() - timedelta(days=1, hours=2),
        late_until=timezone.now() + timedelta(days=3),
        late_penalty_per_day=Decimal("0.1"),
    )
    attempt = answer(cast.alice, "04-a100-cores-per-sm", "64")
    assert attempt.is_late and attempt.late_days == 2 and attempt.score == Decimal("0.800")


def test_the_offering_sets_the_attempt_limit_and_the_score_per_attempt(cast: Cast) -> None:
    policy(cast, max_attempts=2)
    item = Item.objects.get(slug=SLUG)
    QuizSettings.objects.create(offering=cast.offering, quiz=item.quiz, attempt_scores=[1.0, 0.25])
    answer(cast.alice, "04-a100-cores-per-sm", "128")
    assert answer(cast.alice, "04-a100-cores-per-sm", "64").score == Decimal("0.250")
    answer(cast.bob, "04-a100-cores-per-sm", "1")
    answer(cast.bob, "04-a100-cores-per-sm", "2")
    assert "used all 2" in refused(cast.bob, "04-a100-cores-per-sm", "64", 403)


def test_quiz_scores_for_sums_each_students_best_attempts(cast: Cast) -> None:
    answer(cast.alice, "04-a100-cores-per-sm", "64")
    answer(cast.alice, "14-ai-two-on-a100", "compute")
    answer(cast.alice, "14-ai-two-on-a100", "memory")
    answer(cast.bob, "04-a100-cores-per-sm", "128")
    answer(cast.tara, "04-a100-cores-per-sm", "64")  # staff answers are not in the gradebook
    rows = {r.username: r for r in quiz_scores_for(offering=cast.offering) if r.quiz == SLUG}
    assert set(rows) == {"alice", "bob"}
    assert rows["alice"].score == Decimal("1.700") and rows["alice"].answered == 2
    assert rows["bob"].score == 0 and rows["bob"].answered == 1
    assert rows["alice"].max_score == Item.objects.get(slug=SLUG).max_score
