"""Writes for quizzes: syncing quiz files into rows, and recording an attempt.

An answer is read before anything is written: a malformed one raises Refused and costs
no attempt. A readable answer becomes exactly one Attempt row, numbered under a lock on the
user's row (and a unique constraint) so two quick clicks never both count as attempt 2.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from courseware.accounts.timezone import local_datetime_text
from courseware.courses.models import Course, Item, ItemKind
from courseware.courses.selectors import enrolment_for_item
from courseware.quizzes import marking, variants
from courseware.quizzes.content import QuizUnavailable, quiz_spec_for
from courseware.quizzes.models import Attempt, Question, Quiz
from courseware.quizzes.parsing import AnswerInvalid, parse_number
from courseware.quizzes.selectors import QuizPolicy, quiz_get_published, quiz_policy_for
from courseware.quizzes.short_spec import short_points
from courseware.quizzes.spec import Question as QuestionSpec
from courseware.quizzes.spec import QuizFileError, QuizSpec, Solution
from courseware.refusals import Refused
from graders.spec.content import SlugRegistry

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- sync


def quizzes_sync(*, quizzes: list[QuizSpec], root: Path, course: Course) -> list[str]:
    """Mirror the quiz files into Item, Quiz and Question rows. Returns the slugs of quizzes
    no longer in the files (unpublished, never deleted: attempts point at them). Call it
    inside the caller's transaction. SpecError (naming both files) when a quiz's slug is
    already taken by an exercise or notebook in the database."""
    slugs = SlugRegistry()
    others = Item.objects.filter(slug__in=[q.slug for q in quizzes]).exclude(kind=ItemKind.QUIZ)
    for other in others:
        # ItemKind values name the spec file: exercise.toml, notebook.toml.
        slugs.claim(other.slug, root / other.source_path, f"{other.kind}.toml")
    for spec in quizzes:
        slugs.claim(spec.slug, spec.path, "quiz.toml")
    for spec in quizzes:
        item, _created = Item.objects.update_or_create(
            slug=spec.slug,
            defaults={
                "course": course,
                "kind": ItemKind.QUIZ,
                "chapter": spec.chapter,
                "title_en": spec.title["en"],
                "title_zh": spec.title["zh"],
                "source_path": str(spec.path.resolve().relative_to(root.resolve())),
                "content_hash": spec.content_hash,
                # The hand-graded short answers (short/*.toml) count towards the quiz too.
                "max_score": Decimal(str(spec.max_score)) + short_points(spec.path),
                "device_kinds": [],
                "is_published": True,
            },
        )
        quiz, _created = Quiz.objects.update_or_create(
            item=item,
            defaults={"reveal": spec.reveal, "attempt_scores": list(spec.attempt_scores)},
        )
        for position, question in enumerate(spec.questions, start=1):
            Question.objects.update_or_create(
                quiz=quiz,
                key=question.key,
                defaults={
                    "position": position,
                    "kind": question.kind,
                    "section": question.section,
                    "points": Decimal(str(question.points)),
                    "text_en": question.text["en"],
                    "text_zh": question.text["zh"],
                    "is_active": True,
                },
            )
        quiz.questions.exclude(key__in=[q.key for q in spec.questions]).update(is_active=False)
    gone = Item.objects.filter(kind=ItemKind.QUIZ, is_published=True).exclude(
        slug__in=[q.slug for q in quizzes]
    )
    unpublished = sorted(gone.values_list("slug", flat=True))
    gone.update(is_published=False)
    return unpublished


# --------------------------------------------------------------------------- answering


@dataclass(frozen=True)
class ReadAnswer:
    raw: str  # as typed (choice ids joined by commas)
    value: Any  # JSON: a number in the question's unit, or a sorted list of choice ids


def answer_read(*, question: QuestionSpec, answer: object) -> ReadAnswer:
    """Read an answer for this question, or raise AnswerInvalid saying how to send it."""
    ids = [c.id for c in question.choices]
    if question.kind == "numeric":
        if isinstance(answer, int | float) and not isinstance(answer, bool):
            answer = repr(answer) if math.isfinite(answer) else "nan"
        if not isinstance(answer, str):
            raise AnswerInvalid(_('Send the answer as text, e.g. "1.25" or "33 us".'))
        parsed = parse_number(answer, unit=question.unit)
        return ReadAnswer(answer.strip(), parsed.value)
    if question.kind == "single":
        if not isinstance(answer, str) or not answer.strip():
            raise AnswerInvalid(
                _("Choose one answer: send the id of one choice (%(ids)s).")
                % {"ids": ", ".join(ids)}
            )
        chosen = [answer.strip()]
    else:
        if isinstance(answer, str):
            answer = [answer]
        if not isinstance(answer, list) or not all(isinstance(a, str) for a in answer):
            raise AnswerInvalid(
                _('Send the chosen ids as a list, e.g. ["%(id)s"].') % {"id": ids[0]}
            )
        if not answer:
            raise AnswerInvalid(_("Choose at least one answer."))
        chosen = sorted({a.strip() for a in answer})
    unknown = [c for c in chosen if c not in ids]
    if unknown:
        raise AnswerInvalid(
            _("'%(bad)s' is not a choice of this question; the choices are %(ids)s.")
            % {"bad": unknown[0][:40], "ids": ", ".join(ids)}
        )
    return ReadAnswer(",".join(chosen), chosen)


def _late_days(due_at: Any, now: Any) -> int:
    if due_at is None or now <= due_at:
        return 0
    return math.ceil((now - due_at) / timedelta(days=1))


def _question_for(
    *, quiz_slug: str, question_key: str
) -> tuple[Item, Question, QuestionSpec, QuizSpec]:
    """The published quiz, the question's row and its spec, or Refused (404, or 503 mid-edit)."""
    item = quiz_get_published(slug=quiz_slug)
    if item is None:
        raise Refused(
            _("There is no quiz named '%(slug)s'.") % {"slug": str(quiz_slug)[:80]},
            status_code=404,
        )
    row = item.quiz.questions.filter(key=str(question_key), is_active=True).first()
    try:
        spec = quiz_spec_for(item)
    except QuizUnavailable:
        spec = None
    question = spec.question(row.key) if (spec is not None and row is not None) else None
    if row is None or question is None or spec is None:
        if row is not None:  # in the database but its file is broken or gone
            raise Refused(
                _("This question is being updated. Try again in a few minutes."), status_code=503
            )
        raise Refused(
            _("Quiz '%(quiz)s' has no question '%(key)s'.")
            % {"quiz": item.slug, "key": str(question_key)[:80]},
            status_code=404,
        )
    return item, row, question, spec


def _refuse_unless_open(policy: QuizPolicy, now: datetime) -> None:
    if not policy.is_open(now) and policy.opens_at is not None:
        raise Refused(
            _("This quiz opens on %(when)s; answer after that.")
            % {"when": local_datetime_text(policy.opens_at)},
            status_code=403,
        )
    if policy.is_closed(now) and policy.due_at is not None:
        raise Refused(
            _(
                "The deadline for this quiz passed on %(when)s; answers are no longer accepted. "
                "Ask your instructor if you need an extension."
            )
            % {"when": local_datetime_text(policy.due_at)},
            status_code=403,
        )


def _marked(
    question: QuestionSpec, read: ReadAnswer, solution: Solution
) -> tuple[bool, dict[str, Any]]:
    """Whether the answer is right, and what was expected (kept with the attempt)."""
    if isinstance(solution.answer, float):
        assert question.tolerance is not None
        correct = question.tolerance.accepts(float(read.value), solution.answer)
        return correct, {"value": solution.answer, "unit": question.unit}
    correct = marking.choices_correct(set(read.value), set(solution.answer))
    return correct, {"choices": sorted(solution.answer)}


def attempt_create(*, user: User, quiz_slug: str, question_key: str, answer: object) -> Attempt:
    """Grade one answer now and record it as the user's next attempt at the question."""
    item, row, question, spec = _question_for(quiz_slug=quiz_slug, question_key=question_key)
    enrolment = enrolment_for_item(user=user, item=item)
    if enrolment is None and not getattr(user, "is_superuser", False):
        raise Refused(
            _(
                "You are not enrolled in a running offering of this course. "
                "Ask your instructor to enrol you."
            ),
            status_code=403,
        )
    offering = enrolment.offering if enrolment else None
    now = timezone.now()
    policy = quiz_policy_for(quiz=item.quiz, offering=offering, user=user)
    _refuse_unless_open(policy, now)
    try:
        read = answer_read(question=question, answer=answer)
    except AnswerInvalid as invalid:
        raise Refused(invalid.message, status_code=400) from None

    with transaction.atomic():
        # Lock the user's row so that two quick answers cannot take the same attempt number.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        earlier = list(
            Attempt.objects.filter(user=user, question=row, offering=offering).order_by("number")
        )
        if any(a.is_correct for a in earlier):
            raise Refused(_("You already answered this question right."), status_code=409)
        if len(earlier) >= policy.max_attempts:
            raise Refused(
                _("You have used all %(n)d attempts at this question.")
                % {"n": policy.max_attempts},
                status_code=403,
            )
        number = len(earlier) + 1
        variables = variants.variant_for(
            question=question, user_id=user.pk, quiz_slug=spec.slug, attempt=number
        )
        try:
            solution = question.solve(variables)
        except QuizFileError:
            logger.exception("Quiz %s question %s failed to solve", spec.slug, question.key)
            raise Refused(
                _("This question is being updated. Try again in a few minutes."), status_code=503
            ) from None
        correct, expected = _marked(question, read, solution)
        days = _late_days(policy.due_at, now)
        factor = policy.factor_for(number)
        late_factor = max(Decimal(0), Decimal(1) - policy.late_penalty_per_day * days)
        score = row.points * factor * late_factor if correct else Decimal(0)
        try:
            with transaction.atomic():
                attempt = Attempt.objects.create(
                    user=user,
                    question=row,
                    offering=offering,
                    number=number,
                    raw_answer=read.raw,
                    answer=json.loads(json.dumps(read.value)),
                    variables=variables,
                    expected=expected,
                    is_correct=correct,
                    attempt_factor=factor,
                    is_late=days > 0,
                    late_days=days,
                    score=score.quantize(Decimal("0.001")),
                    content_hash=spec.content_hash,
                )
        except IntegrityError:
            raise Refused(
                _("This answer crossed with another one you sent. Reload the page and try again."),
                status_code=409,
            ) from None
    return attempt
