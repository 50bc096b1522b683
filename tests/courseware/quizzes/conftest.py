"""Shared helpers: the chapter bank, and the right answer for a student's own variant."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from courseware.quizzes.models import Attempt
from courseware.quizzes.services import attempt_create
from courseware.quizzes.spec import Question, QuizSpec, load_quiz
from courseware.quizzes.variants import variant_for

SLUG = "ch15-gpu-fundamentals-quiz"


@cache
def bank() -> QuizSpec:
    return load_quiz(settings.GRADERS_EXERCISES_ROOT / "ch15" / "quiz", validate=False)


def question(key: str, quiz: QuizSpec | None = None) -> Question:
    """The bank's (or ``quiz``'s) question ``key``; a typo in a test fails here, by name."""
    found = (quiz or bank()).question(key)
    assert found is not None, f"no question {key!r}"
    return found


def variant(user: User, key: str, attempt: int = 1) -> dict[str, Any]:
    return variant_for(question=question(key), user_id=user.pk, quiz_slug=SLUG, attempt=attempt)


def right_answer(user: User, key: str, attempt: int = 1) -> Any:
    asked = question(key)
    solution = asked.solve(variant(user, key, attempt))
    if asked.kind == "numeric":
        return f"{solution.answer:.6g} {asked.unit or ''}".strip()
    assert isinstance(solution.answer, frozenset)  # choice questions answer with choice ids
    ids = sorted(solution.answer)
    return ids[0] if asked.kind == "single" else ids


def answer(user: User, key: str, value: Any) -> Attempt:
    return attempt_create(user=user, quiz_slug=SLUG, question_key=key, answer=value)


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client
