"""Reads for quizzes: the policy in force, what a student may see of each question, scores."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from courseware.accounts.timezone import local_datetime_text
from courseware.courses.models import Enrolment, Item, ItemKind, Offering, Role
from courseware.courses.selectors import closes_at, enrolment_for_item, policy_for, user_is_staff_of
from courseware.quizzes import variants
from courseware.quizzes.content import quiz_spec_for
from courseware.quizzes.models import Attempt, Question, Quiz, QuizSettings, RevealMode
from courseware.quizzes.spec import Choice, QuizSpec, render
from courseware.quizzes.spec import Question as QuestionSpec


@dataclass(frozen=True)
class QuizPolicy:
    opens_at: datetime | None
    due_at: datetime | None
    late_until: datetime | None
    max_attempts: int
    late_penalty_per_day: Decimal
    attempt_scores: tuple[float, ...]
    reveal: str

    @property
    def closes_at(self) -> datetime | None:
        return closes_at(due_at=self.due_at, late_until=self.late_until)

    def factor_for(self, number: int) -> Decimal:
        """The share of the points attempt `number` earns; the last listed one repeats."""
        scores = self.attempt_scores or (1.0,)
        return Decimal(str(scores[min(number, len(scores)) - 1]))

    def is_open(self, now: datetime) -> bool:
        return self.opens_at is None or now >= self.opens_at

    def is_closed(self, now: datetime) -> bool:
        return self.closes_at is not None and now > self.closes_at


def quiz_policy_for(
    *, quiz: Quiz, offering: Offering | None, user: User | None = None
) -> QuizPolicy:
    """ItemPolicy/Offering defaults for time, attempts and lateness (with `user`'s own extension
    applied); QuizSettings, else the quiz file, for the score per attempt and the reveal mode.
    With no attempt limit set anywhere, a student gets one attempt per listed score."""
    scores = tuple(quiz.attempt_scores) or (1.0,)
    reveal = quiz.reveal
    if offering is None:
        return QuizPolicy(None, None, None, len(scores), Decimal(0), scores, reveal)
    own = QuizSettings.objects.filter(offering=offering, quiz=quiz).first()
    if own is not None:
        scores = tuple(own.attempt_scores) if own.attempt_scores else scores
        reveal = own.reveal or reveal
    base = policy_for(offering=offering, item=quiz.item, user=user)
    return QuizPolicy(
        opens_at=base.opens_at,
        due_at=base.due_at,
        late_until=base.late_until,
        max_attempts=base.max_attempts if base.max_attempts is not None else len(scores),
        late_penalty_per_day=base.late_penalty_per_day,
        attempt_scores=scores,
        reveal=reveal,
    )


def quiz_list_published() -> list[Item]:
    return list(
        Item.objects.filter(kind=ItemKind.QUIZ, is_published=True, quiz__isnull=False)
        .select_related("quiz")
        .order_by("chapter", "position", "slug")
    )


def quiz_get_published(*, slug: str) -> Item | None:
    if not isinstance(slug, str):
        return None
    return (
        Item.objects.filter(slug=slug, kind=ItemKind.QUIZ, is_published=True, quiz__isnull=False)
        .select_related("quiz", "course")
        .first()
    )


def quiz_asking_question(*, key: str, excluding: str) -> Item | None:
    """A published quiz other than `excluding` that asks question `key`: where to send a
    student whose answer reached the wrong quiz."""
    return (
        Item.objects.filter(
            kind=ItemKind.QUIZ,
            is_published=True,
            quiz__questions__key=key,
            quiz__questions__is_active=True,
        )
        .exclude(slug=excluding)
        .order_by("chapter", "position", "slug")
        .first()
    )


def _lang(language: str | None) -> str:
    return "zh" if language and language.startswith("zh") else "en"


@dataclass
class AttemptView:
    number: int
    raw_answer: str
    is_correct: bool
    score: Decimal
    is_late: bool
    created_at: datetime
    # The options picked, as (letter, text) the way the student saw them; empty for a number.
    chosen: list[tuple[str, str]] = field(default_factory=list)
    # Asked with other numbers than the question now shows (a parametrised question redrawn).
    other_numbers: bool = False


# Where a student stands on a question, as the page's navigator shows it.
STATUS_LABELS = {
    "unanswered": gettext_lazy("not answered"),
    "right": gettext_lazy("right"),
    "wrong": gettext_lazy("not right, try again"),
    "exhausted": gettext_lazy("out of attempts"),
}


@dataclass
class QuestionState:
    key: str
    kind: str
    section: str
    position: int
    points: Decimal
    text: str
    choices: list[tuple[str, str]]
    unit: str | None
    attempts: list[AttemptView]
    max_attempts: int
    next_factor: Decimal | None
    solved: bool
    score: Decimal
    can_answer: bool
    why_not: str  # why no answer is taken now, for the page and the API
    revealed: bool
    explanation: str | None = None
    answer_text: str | None = None
    # The last answer was wrong and the next try asks with freshly drawn numbers.
    new_numbers: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def attempts_used(self) -> int:
        return len(self.attempts)

    @property
    def status(self) -> str:
        """One of STATUS_LABELS' keys."""
        if self.solved:
            return "right"
        if not self.attempts:
            return "unanswered"
        return "wrong" if self.attempts_left else "exhausted"

    @property
    def status_label(self) -> str:
        return str(STATUS_LABELS[self.status])

    @property
    def attempts_left(self) -> int:
        return 0 if self.solved else max(0, self.max_attempts - len(self.attempts))


@dataclass
class QuizState:
    item: Item
    title: str
    policy: QuizPolicy
    enrolled: bool
    for_staff: bool
    questions: list[QuestionState]
    now: datetime

    @property
    def score(self) -> Decimal:
        return sum((q.score for q in self.questions), Decimal(0))

    @property
    def max_score(self) -> Decimal:
        return sum((q.points for q in self.questions), Decimal(0))


def _why_not(policy: QuizPolicy, now: datetime, enrolled: bool) -> str:
    if not enrolled:
        return _("You are not enrolled in a running offering of this course.")
    if policy.opens_at is not None and not policy.is_open(now):
        return _("This quiz opens on %(when)s.") % {"when": local_datetime_text(policy.opens_at)}
    if policy.is_closed(now):
        return _("The deadline has passed; answers are no longer accepted.")
    return ""


def _as_json(variables: dict[str, Any]) -> Any:
    """The variables as an Attempt stores them (JSON), so a fresh draw compares equal."""
    return json.loads(json.dumps(variables))


def _worded(text: str, variables: dict[str, Any]) -> str:
    """An option's text with an old attempt's numbers; the bare template if the quiz has been
    edited since and those numbers no longer fit it (the history must still show)."""
    try:
        return render(text, variables)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError):
        return text


def _chosen(order: list[Choice], attempt: Attempt, lang: str) -> list[tuple[str, str]]:
    """The options an attempt picked, lettered in the student's order and worded with the
    numbers of that attempt. An id no longer in the quiz's files is shown as it was stored."""
    if not isinstance(attempt.answer, list):
        return []
    picked = set(attempt.answer)
    shown = [
        (chr(ord("A") + i), _worded(c.text[lang], attempt.variables))
        for i, c in enumerate(order)
        if c.id in picked
    ]
    known = {c.id for c in order}
    return shown + [("?", str(cid)) for cid in attempt.answer if cid not in known]


def question_state(
    *,
    spec: QuizSpec,
    question: QuestionSpec,
    row: Question,
    user: User,
    attempts: list[Attempt],
    policy: QuizPolicy,
    now: datetime,
    language: str | None,
    closed_reason: str,
    for_staff: bool,
) -> QuestionState:
    lang = _lang(language)
    solved = any(a.is_correct for a in attempts)
    exhausted = len(attempts) >= policy.max_attempts
    done = solved or exhausted
    if policy.reveal == RevealMode.AFTER_DEADLINE:
        revealed = policy.is_closed(now)
    else:
        revealed = done or policy.is_closed(now)
    revealed = revealed or for_staff
    # A finished question shows the numbers of the last attempt; otherwise the next one's.
    if done and attempts:
        variables = attempts[-1].variables
    else:
        variables = variants.variant_for(
            question=question, user_id=user.pk, quiz_slug=spec.slug, attempt=len(attempts) + 1
        )
    order = variants.choice_order(question=question, user_id=user.pk, quiz_slug=spec.slug)
    shown_numbers = _as_json(variables)
    why_not = closed_reason
    if not why_not and solved:
        why_not = _("You answered this question right.")
    elif not why_not and exhausted:
        why_not = _("You have used all %(n)d attempts.") % {"n": policy.max_attempts}
    state = QuestionState(
        key=question.key,
        kind=question.kind,
        section=question.section,
        position=row.position,
        points=row.points,
        text=render(question.text[lang], variables),
        choices=[(c.id, render(c.text[lang], variables)) for c in order],
        unit=question.unit,
        attempts=[
            AttemptView(
                a.number,
                a.raw_answer,
                a.is_correct,
                a.score,
                a.is_late,
                a.created_at,
                chosen=_chosen(order, a, lang),
                other_numbers=question.is_parameterized and a.variables != shown_numbers,
            )
            for a in attempts
        ],
        max_attempts=policy.max_attempts,
        next_factor=None if done else policy.factor_for(len(attempts) + 1),
        solved=solved,
        score=max((a.score for a in attempts), default=Decimal(0)),
        can_answer=not why_not,
        why_not=why_not,
        revealed=revealed,
        new_numbers=bool(
            question.is_parameterized
            and attempts
            and not done
            and attempts[-1].variables != shown_numbers
        ),
    )
    if revealed:
        solution = question.solve(variables)
        context = question.explanation_context(solution, variables, lang)
        state.explanation = render(question.explanation[lang], context)
        state.answer_text = question.answer_text(solution, variables, lang)
    return state


def quiz_state_for(
    *, user: User, item: Item, language: str | None, now: datetime | None = None
) -> QuizState:
    """Everything one user may see of a quiz now. The answers and explanations are filled in
    only for questions whose reveal condition holds (or for the offering's staff)."""
    now = now or timezone.now()
    quiz = item.quiz
    spec = quiz_spec_for(item)
    enrolment = enrolment_for_item(user=user, item=item)
    offering = enrolment.offering if enrolment else None
    for_staff = user_is_staff_of(user=user, offering=offering)
    policy = quiz_policy_for(quiz=quiz, offering=offering, user=user)
    enrolled = enrolment is not None or getattr(user, "is_superuser", False)
    closed_reason = _why_not(policy, now, enrolled)
    rows = list(quiz.questions.filter(is_active=True).order_by("position"))
    by_question: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in Attempt.objects.filter(user=user, question__in=rows, offering=offering).order_by(
        "number"
    ):
        by_question[attempt.question_id].append(attempt)
    questions = []
    for row in rows:
        question = spec.question(row.key)
        if question is None:  # removed on disk, not yet synced: don't ask it
            continue
        questions.append(
            question_state(
                spec=spec,
                question=question,
                row=row,
                user=user,
                attempts=by_question[row.pk],
                policy=policy,
                now=now,
                language=language,
                closed_reason=closed_reason,
                for_staff=for_staff,
            )
        )
    return QuizState(
        item=item,
        title=item.title(language),
        policy=policy,
        enrolled=enrolled,
        for_staff=for_staff,
        questions=questions,
        now=now,
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def question_as_api(state: QuestionState) -> dict[str, Any]:
    """What the API shows of one question. `answer` and `explanation` stay null until revealed."""
    return {
        "id": state.key,
        "type": state.kind,
        "section": state.section,
        "points": float(state.points),
        "text": state.text,
        "choices": [{"id": cid, "text": text} for cid, text in state.choices],
        "unit": state.unit,
        "attempts_used": state.attempts_used,
        "attempts_left": state.attempts_left,
        "next_attempt_factor": float(state.next_factor) if state.next_factor is not None else None,
        "solved": state.solved,
        "score": float(state.score),
        "can_answer": state.can_answer,
        "message": state.why_not,
        "revealed": state.revealed,
        "status": state.status,
        "new_numbers": state.new_numbers,
        "answer": state.answer_text if state.revealed else None,
        "explanation": state.explanation if state.revealed else None,
        "attempts": [
            {
                "number": a.number,
                "answer": a.raw_answer,
                "correct": a.is_correct,
                "score": float(a.score),
                "is_late": a.is_late,
                "created_at": a.created_at.isoformat(),
            }
            for a in state.attempts
        ],
    }


def quiz_as_api(state: QuizState) -> dict[str, Any]:
    return {
        "slug": state.item.slug,
        "chapter": state.item.chapter,
        "title": state.title,
        "opens_at": _iso(state.policy.opens_at),
        "due_at": _iso(state.policy.due_at),
        "late_until": _iso(state.policy.late_until),
        "max_attempts": state.policy.max_attempts,
        "attempt_scores": list(state.policy.attempt_scores),
        "late_penalty_per_day": float(state.policy.late_penalty_per_day),
        "reveal": state.policy.reveal,
        "score": float(state.score),
        "max_score": float(state.max_score),
        "questions": [question_as_api(q) for q in state.questions],
    }


@dataclass(frozen=True)
class QuizScore:
    """One student's standing on one quiz: the best attempt per question, summed."""

    user_id: int
    username: str
    quiz: str
    score: Decimal
    max_score: Decimal
    questions: dict[str, Decimal]
    answered: int


def quiz_scores_for(*, offering: Offering) -> list[QuizScore]:
    """Every student of the offering × every published quiz of its course, for a gradebook.
    A question never answered counts 0."""
    students = list(
        Enrolment.objects.filter(offering=offering, role=Role.STUDENT)
        .select_related("user")
        .order_by("user__username")
    )
    # Hand-graded short answers count with their latest grade (short_answers imports us).
    from courseware.quizzes.short_answers import short_max_for, short_scores_for

    short = short_scores_for(offering=offering)
    quizzes = [q for q in quiz_list_published() if q.course_id == offering.course_id]
    best: dict[tuple[int, int], Decimal] = {
        (row["user_id"], row["question_id"]): row["best"]
        for row in Attempt.objects.filter(offering=offering)
        .values("user_id", "question_id")
        .annotate(best=Max("score"))
    }
    rows = []
    for item in quizzes:
        questions = list(item.quiz.questions.filter(is_active=True).order_by("position"))
        max_score = sum((q.points for q in questions), Decimal(0)) + short_max_for(item)
        for enrolment in students:
            per = {q.key: best.get((enrolment.user_id, q.pk), Decimal(0)) for q in questions}
            answered = sum((enrolment.user_id, q.pk) in best for q in questions)
            graded = short.get((enrolment.user_id, item.pk))
            if graded is not None:
                per["short-answers"], answered = graded, answered + 1
            rows.append(
                QuizScore(
                    user_id=enrolment.user_id,
                    username=enrolment.user.get_username(),
                    quiz=item.slug,
                    score=sum(per.values(), Decimal(0)),
                    max_score=max_score,
                    questions=per,
                    answered=answered,
                )
            )
    return rows
