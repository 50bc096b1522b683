"""A long quiz shown a part at a time: its questions grouped by the chapter section they test.

A 34-question chapter quiz on one page is several screens of scrolling between a question and
what the page says about it; one section at a time (with a navigator to the others) keeps the
question, its form and its feedback together. Parts are numbered from 1 in the order their
first question appears, so `?part=3` names the same part for as long as the quiz is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from courseware.quizzes.models import Question
from courseware.quizzes.selectors import QuestionState


class Asked(Protocol):
    """A question as a row or as a student's state of it: all grouping needs."""

    @property
    def key(self) -> str: ...

    @property
    def section(self) -> str: ...

    @property
    def position(self) -> int: ...


Q = TypeVar("Q", bound=Asked)

ALL_PARTS = "all"  # ?part=all: every question on one page (to review or print)


@dataclass(frozen=True)
class QuizPart(Generic[Q]):
    number: int
    section: str  # the chapter section, e.g. "15.5"; "" for questions given none
    questions: list[Q]

    @property
    def first(self) -> int:
        return self.questions[0].position

    @property
    def last(self) -> int:
        return self.questions[-1].position


def quiz_parts(questions: Sequence[Q]) -> list[QuizPart[Q]]:
    """The questions grouped by section, each group in question order."""
    groups: dict[str, list[Q]] = {}
    for question in questions:
        groups.setdefault(question.section, []).append(question)
    return [
        QuizPart(number=n, section=section, questions=grouped)
        for n, (section, grouped) in enumerate(groups.items(), start=1)
    ]


def part_holding(parts: list[QuizPart[Q]], key: str) -> QuizPart[Q] | None:
    """The part that asks question `key`, if any does."""
    return next((p for p in parts if any(q.key == key for q in p.questions)), None)


def part_to_resume(parts: list[QuizPart[QuestionState]]) -> QuizPart[QuestionState] | None:
    """Where a student coming back picks up: the first part with a question still to answer."""
    for part in parts:
        if any(q.can_answer and q.status in ("unanswered", "wrong") for q in part.questions):
            return part
    return parts[0] if parts else None


def part_asked_for(parts: list[QuizPart[Q]], value: str | None) -> QuizPart[Q] | None:
    """The part `?part=` names, or None when it names none (then the page picks one)."""
    if value is None or not value.isdigit():
        return None
    number = int(value)
    return parts[number - 1] if 1 <= number <= len(parts) else None


@dataclass(frozen=True)
class Placed:
    """Where a question row sits: enough to group it without a student's whole state."""

    key: str
    section: str
    position: int


def parts_of_rows(rows: Sequence[Question]) -> list[QuizPart[Placed]]:
    """The parts as the quiz's active rows make them, to say where a question lives."""
    return quiz_parts([Placed(r.key, r.section, r.position) for r in rows if r.is_active])
