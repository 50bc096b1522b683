"""Shared helpers: the chapter bank, and the right answer for a student's own variant."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.conf import settings
from django.test import Client

from courseware.quizzes.models import Attempt
from courseware.quizzes.services import attempt_create
from courseware.quizzes.spec import QuizSpec, load_quiz
from courseware.quizzes.variants import variant_for

SLUG = "ch15-gpu-fundamentals-quiz"


@cache
def bank() -> QuizSpec:
    return load_quiz(settings.GRADERS_EXERCISES_ROOT / "ch15" / "quiz", validate=False)


def variant(user: Any, key: str, attempt: int = 1) -> dict[str, Any]:
    return variant_for(
        question=bank().question(key), user_id=user.pk, quiz_slug=SLUG, attempt=attempt
    )


def right_answer(user: Any, key: str, attempt: int = 1) -> Any:
    question = bank().question(key)
    solution = question.solve(variant(user, key, attempt))
    if question.kind == "numeric":
        return f"{solution.answer:.6g} {question.unit or ''}".strip()
    ids = sorted(solution.answer)
    return ids[0] if question.kind == "single" else ids


def answer(user: Any, key: str, value: Any) -> Attempt:
    return attempt_create(user=user, quiz_slug=SLUG, question_key=key, answer=value)


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client
