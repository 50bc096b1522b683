"""Which variant a student sees: seeds derived from a server secret, never stored secrets.

The seed is an HMAC of the site's SECRET_KEY over (user, quiz, question, attempt number), so the
same student sees the same numbers on every reload, a different student sees other numbers, and
nobody can compute someone else's variant without the key.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from typing import Any

from django.conf import settings

from courseware.quizzes.spec import Choice, Question


def _seed(*parts: object) -> int:
    message = ":".join(str(p) for p in parts).encode()
    digest = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


def variant_seed(*, user_id: int, quiz_slug: str, question_key: str, attempt: int) -> int:
    return _seed("quiz-variant", user_id, quiz_slug, question_key, attempt)


def variant_for(
    *, question: Question, user_id: int, quiz_slug: str, attempt: int
) -> dict[str, Any]:
    """The variables this student gets on this attempt (empty for a fixed question)."""
    if not question.is_parameterized:
        return {}
    seed = variant_seed(
        user_id=user_id, quiz_slug=quiz_slug, question_key=question.key, attempt=attempt
    )
    return question.draw(seed)


def choice_order(*, question: Question, user_id: int, quiz_slug: str) -> list[Choice]:
    """The choices in this student's order; the same on every attempt and reload."""
    choices = list(question.choices)
    if question.shuffle:
        random.Random(_seed("quiz-order", user_id, quiz_slug, question.key)).shuffle(choices)
    return choices
