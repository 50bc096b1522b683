"""Short answers: saving a student's, grading one with the rubric, and reading them back.

Writes refuse bad input with a message saying what to do (courseware.refusals.Refused); reads
never write. The gradebook counts a graded answer's latest grade (quiz_scores_for), and the LMS
gets the quiz's new total when a TA saves a grade (courseware/lti/signals.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _

from courseware.courses.models import Enrolment, Item, Offering, Role
from courseware.courses.selectors import (
    enrolment_for_item,
    offering_ids_staffed_by,
    user_is_staff_of,
)
from courseware.quizzes.content import quiz_folder
from courseware.quizzes.selectors import quiz_get_published, quiz_policy_for
from courseware.quizzes.short_answer_models import ShortAnswer, ShortAnswerGrade
from courseware.quizzes.short_spec import (
    MAX_ANSWER_CHARS,
    ShortQuestion,
    load_short_questions,
)
from courseware.refusals import Refused
from graders.errors import SpecError

_THOUSANDTH = Decimal("0.001")


def short_questions_for(item: Item) -> tuple[ShortQuestion, ...]:
    """The quiz's short-answer items, from its files; () when it has none or they are broken."""
    try:
        return load_short_questions(quiz_folder(item))
    except (SpecError, OSError):
        return ()


def _item_and_question(quiz_slug: str, key: str) -> tuple[Item, ShortQuestion]:
    item = quiz_get_published(slug=quiz_slug)
    if item is None:
        raise Refused(
            _("There is no quiz named '%(slug)s'.") % {"slug": str(quiz_slug)[:80]},
            status_code=404,
        )
    question = next((q for q in short_questions_for(item) if q.key == key), None)
    if question is None:
        raise Refused(
            _("Quiz '%(quiz)s' has no question '%(key)s'.")
            % {"quiz": item.slug, "key": str(key)[:80]},
            status_code=404,
        )
    return item, question


def latest_grade(answer: ShortAnswer) -> ShortAnswerGrade | None:
    return answer.grades.select_related("grader").first()


def short_answer_save(*, user: User, quiz_slug: str, key: str, text: object) -> ShortAnswer:
    """Save (or rewrite) the user's answer while the quiz is open and it is not yet graded."""
    item, _question = _item_and_question(quiz_slug, key)
    enrolment = enrolment_for_item(user=user, item=item)
    if enrolment is None and not getattr(user, "is_superuser", False):
        raise Refused(
            _(
                "You are not enrolled in a running offering of this course. "
                "Ask your instructor to enrol you."
            ),
            status_code=403,
        )
    answer_text = text.strip() if isinstance(text, str) else ""
    if not answer_text:
        raise Refused(_("Write your answer in the box, then save it."), status_code=400)
    if len(answer_text) > MAX_ANSWER_CHARS:
        raise Refused(
            _("Your answer has %(n)d characters; keep it under %(max)d (a few sentences).")
            % {"n": len(answer_text), "max": MAX_ANSWER_CHARS},
            status_code=400,
        )
    offering = enrolment.offering if enrolment else None
    policy = quiz_policy_for(quiz=item.quiz, offering=offering, user=user)
    now = timezone.now()
    if not policy.is_open(now) or policy.is_closed(now):
        raise Refused(
            _("This quiz is not open for answers now; see its dates on the quiz page."),
            status_code=403,
        )
    with transaction.atomic():
        answer, _created = ShortAnswer.objects.select_for_update().get_or_create(
            user=user, item=item, offering=offering, key=key, defaults={"text": answer_text}
        )
        if not _created:
            if answer.grades.exists():
                raise Refused(
                    _("Your answer has been graded, so it can no longer be changed."),
                    status_code=409,
                )
            answer.text = answer_text
        answer.is_late = policy.due_at is not None and now > policy.due_at
        answer.save()
    return answer


def _points_read(question: ShortQuestion, posted: Mapping[str, object]) -> dict[str, Decimal]:
    points: dict[str, Decimal] = {}
    for criterion in question.criteria:
        raw = posted.get(criterion.id)
        try:
            value = Decimal(str(raw).strip().replace(",", "."))
        except (InvalidOperation, ValueError):
            value = Decimal(-1)
        if not value.is_finite() or not Decimal(0) <= value <= criterion.points:
            raise Refused(
                _("Give '%(criterion)s' a number of points from 0 to %(max)s.")
                % {"criterion": criterion.id, "max": criterion.points.normalize()},
                status_code=400,
            )
        points[criterion.id] = value.quantize(_THOUSANDTH)
    return points


def short_answer_grade(
    *, grader: User, answer: ShortAnswer, points: Mapping[str, object], comment: str = ""
) -> ShortAnswerGrade:
    """Record a TA's grade: points per criterion of the rubric, and an optional comment."""
    if not user_is_staff_of(user=grader, offering=answer.offering):
        raise Refused(_("Only the course's TAs and instructors grade answers."), status_code=403)
    _item, question = _item_and_question(answer.item.slug, answer.key)
    read = _points_read(question, points)
    return ShortAnswerGrade.objects.create(
        answer=answer,
        grader=grader,
        points={key: str(value) for key, value in read.items()},
        score=sum(read.values(), Decimal(0)),
        comment=str(comment or "").strip()[:2000],
    )


# ------------------------------------------------------------------ reads


@dataclass
class ShortItemState:
    """One short-answer item as a student sees it on the quiz page."""

    question: ShortQuestion
    text: str  # in the reader's language
    answer: ShortAnswer | None
    grade: ShortAnswerGrade | None
    criteria: list[tuple[str, Decimal, str | None]]  # (text, max points, points given)


def _lang(language: str | None) -> str:
    return "zh" if (language or "").lower().startswith("zh") else "en"


def short_items_for(*, user: User, item: Item, language: str | None) -> list[ShortItemState]:
    lang = _lang(language)
    enrolment = enrolment_for_item(user=user, item=item)
    offering = enrolment.offering if enrolment else None
    answers = {
        a.key: a for a in ShortAnswer.objects.filter(user=user, item=item, offering=offering)
    }
    states = []
    for question in short_questions_for(item):
        answer = answers.get(question.key)
        grade = latest_grade(answer) if answer is not None else None
        given: dict[str, Any] = grade.points if grade is not None else {}
        states.append(
            ShortItemState(
                question=question,
                text=question.text[lang],
                answer=answer,
                grade=grade,
                criteria=[(c.text[lang], c.points, given.get(c.id)) for c in question.criteria],
            )
        )
    return states


@dataclass
class ReviewRow:
    """One answer on the TA's page: who, what, the suggested criteria and the current grade."""

    answer: ShortAnswer
    grade: ShortAnswerGrade | None
    suggested: list[str]
    criteria: list[dict[str, Any]]  # id, text, max, given (or suggested), suggested


def review_rows(
    *, user: User, item: Item, question: ShortQuestion, language: str | None
) -> list[ReviewRow]:
    """The answers ``user`` may grade: those of the offerings they are staff of (all for a
    superuser)."""
    lang = _lang(language)
    answers = ShortAnswer.objects.filter(item=item, key=question.key).select_related("user")
    if not getattr(user, "is_superuser", False):
        answers = answers.filter(offering_id__in=reviewable_offerings(user=user, item=item))
    rows = []
    for answer in answers:
        grade = latest_grade(answer)
        suggested = question.suggested(answer.text)
        given: dict[str, Any] = grade.points if grade is not None else {}
        criteria = [
            {
                "id": c.id,
                "text": c.text[lang],
                "max": c.points.normalize(),
                "value": given.get(c.id, str(c.points.normalize()) if c.id in suggested else "0"),
                "suggested": c.id in suggested,
            }
            for c in question.criteria
        ]
        rows.append(ReviewRow(answer, grade, suggested, criteria))
    rows.sort(key=lambda row: (row.grade is not None, row.answer.user.get_username()))
    return rows


def reviewable_offerings(*, user: User, item: Item) -> list[int]:
    """Ids of the offerings of the quiz's course where ``user`` is a TA or an instructor."""
    return list(
        Enrolment.objects.filter(
            user=user, offering__course_id=item.course_id, role__in=[Role.TA, Role.INSTRUCTOR]
        ).values_list("offering_id", flat=True)
    )


def staff_may_review(*, user: User, item: Item) -> bool:
    """A TA or instructor of some offering of the quiz's course (or a superuser); each sees
    the answers of their own offerings only (review_rows)."""
    if getattr(user, "is_superuser", False):
        return True
    return bool(reviewable_offerings(user=user, item=item))


def short_scores_for(*, offering: Offering) -> dict[tuple[int, int], Decimal]:
    """(user id, quiz item id) -> the points of their graded short answers (latest grades)."""
    totals: dict[tuple[int, int], Decimal] = {}
    answers = ShortAnswer.objects.filter(offering=offering).prefetch_related("grades")
    for answer in answers:
        grades = list(answer.grades.all())  # newest first (Meta.ordering)
        if grades:
            key = (answer.user_id, answer.item_id)
            totals[key] = totals.get(key, Decimal(0)) + grades[0].score
    return totals


def short_max_for(item: Item) -> Decimal:
    return sum((q.points for q in short_questions_for(item)), Decimal(0))


@dataclass(frozen=True)
class WaitingShortAnswers:
    """Ungraded answers to one short-answer item, for a TA's review queue."""

    quiz_slug: str
    key: str
    count: int


def short_answers_waiting(*, user: User) -> list[WaitingShortAnswers]:
    """Per item, the answers of the user's offerings (all for a superuser) not yet graded."""
    answers = ShortAnswer.objects.filter(grades__isnull=True)
    offerings = offering_ids_staffed_by(user=user)
    if offerings is not None:
        answers = answers.filter(offering_id__in=offerings)
    counts = (
        answers.values("item__slug", "key")
        .annotate(count=Count("pk"))
        .order_by("item__slug", "key")
    )
    return [WaitingShortAnswers(row["item__slug"], row["key"], row["count"]) for row in counts]
