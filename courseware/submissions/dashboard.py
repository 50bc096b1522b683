"""The student's dashboard: every item of the course with its deadline, attempts left, best
score and status; what is due soon first, then the rest in the chapters' order.

A read over the rows that already hold the answers (submissions with their gradings, quiz
attempts, policies), in a fixed number of queries whatever the number of submissions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.contrib.auth.models import User
from django.db.models import Count, Max, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from courseware.courses.models import Enrolment, Item, ItemKind, Offering
from courseware.courses.selectors import enrolment_for_item, item_list_published, policies_for
from courseware.quizzes.models import Attempt
from courseware.quizzes.selectors import quiz_policy_for
from courseware.submissions.models import PENDING_STATUSES, Status, Submission
from courseware.submissions.selectors import (
    LatePenalties,
    attempts_used_by_item,
    submission_effective_score,
    submissions_with_scores,
)

# A deadline this close puts the item at the top of the dashboard.
DUE_SOON = timedelta(days=7)
DASHBOARD_KINDS = (ItemKind.EXERCISE, ItemKind.NOTEBOOK, ItemKind.QUIZ)

NOT_STARTED, IN_PROGRESS, SUBMITTED, GRADED, LATE, CLOSED = (
    "not_started",
    "in_progress",
    "submitted",
    "graded",
    "late",
    "closed",
)
STATUS_LABELS: dict[str, Promise] = {
    NOT_STARTED: _("Not started"),
    IN_PROGRESS: _("In progress"),  # a quiz with some questions still open
    SUBMITTED: _("Submitted, waiting for a grade"),
    GRADED: _("Graded"),
    LATE: _("Late: the deadline has passed"),
    CLOSED: _("Closed"),
}


@dataclass(frozen=True)
class Window:
    """When an item takes work: its deadline, the end of the late window, the attempt limit."""

    opens_at: datetime | None
    due_at: datetime | None
    late_until: datetime | None
    max_attempts: int | None

    @property
    def closes_at(self) -> datetime | None:
        if self.due_at is None:
            return None
        return max(self.due_at, self.late_until or self.due_at)

    def next_deadline(self, now: datetime) -> datetime | None:
        """The deadline the student races now: the due date, then the end of the late window."""
        for moment in (self.due_at, self.closes_at):
            if moment is not None and now <= moment:
                return moment
        return None

    def timed_status(self, now: datetime) -> str:
        """The status of an item with nothing handed in: open, late or closed."""
        closes = self.closes_at
        if closes is not None and now > closes:
            return CLOSED
        if self.due_at is not None and now > self.due_at:
            return LATE
        return NOT_STARTED


@dataclass
class DashboardRow:
    item: Item
    title: str
    url: str
    window: Window
    status: str
    attempts_left: int | None  # None: no limit
    attempts_per_question: bool  # a quiz's limit counts per question
    best_score: Decimal | None
    due_soon: bool = False
    deadline: datetime | None = None  # the next one that matters, for sorting

    @property
    def status_label(self) -> str:
        return str(STATUS_LABELS[self.status])

    @property
    def is_finished(self) -> bool:
        """Nothing more to gain: full marks, or no attempt left."""
        full = self.best_score is not None and self.best_score >= self.item.max_score
        return full or self.attempts_left == 0


def _exercise_status(submissions: list[Submission], window: Window, now: datetime) -> str:
    if any(s.status in (*PENDING_STATUSES, Status.NEEDS_REVIEW) for s in submissions):
        return SUBMITTED
    if any(s.status == Status.GRADED for s in submissions):
        return GRADED
    return window.timed_status(now)


def _best_score(submissions: list[Submission], penalties: LatePenalties) -> Decimal | None:
    scores = [
        submission_effective_score(s, s.current_grading, penalties=penalties)
        for s in submissions
        if s.status == Status.GRADED
    ]
    known = [s for s in scores if s is not None]
    return max(known) if known else None


def _enrolments(user: User, items: list[Item]) -> dict[int, Enrolment | None]:
    """Each course's enrolment of this user (one query per course, and a site has one)."""
    found: dict[int, Enrolment | None] = {}
    for item in items:
        if item.course_id not in found:
            found[item.course_id] = enrolment_for_item(user=user, item=item)
    return found


@dataclass
class ExerciseReads:
    """Everything the exercise rows read, loaded once for the whole dashboard."""

    submissions: dict[int, list[Submission]]
    attempts_used: dict[tuple[int, int], int]  # (offering id, item id) → attempts counted
    penalties: LatePenalties


def _exercise_reads(user: User, offerings: list[Offering]) -> ExerciseReads:
    by_item: dict[int, list[Submission]] = defaultdict(list)
    for submission in submissions_with_scores(Submission.objects.filter(user=user)):
        by_item[submission.item_id].append(submission)
    used: dict[tuple[int, int], int] = {}
    for offering in offerings:
        for item_id, n in attempts_used_by_item(user=user, offering_id=offering.pk).items():
            used[(offering.pk, item_id)] = n
    return ExerciseReads(submissions=by_item, attempts_used=used, penalties=LatePenalties())


def _exercise_row(
    *, item: Item, offering: Offering | None, window: Window, reads: ExerciseReads, now: datetime
) -> DashboardRow:
    offering_id = offering.pk if offering is not None else None
    mine = [s for s in reads.submissions.get(item.pk, []) if s.offering_id == offering_id]
    left = None
    if window.max_attempts is not None and offering is not None:
        left = max(0, window.max_attempts - reads.attempts_used.get((offering.pk, item.pk), 0))
    return DashboardRow(
        item=item,
        title="",
        url=reverse("exercise-detail", args=[item.slug]),
        window=window,
        status=_exercise_status(mine, window, now),
        attempts_left=left,
        attempts_per_question=False,
        best_score=_best_score(mine, reads.penalties),
    )


def _quiz_row(*, user: User, item: Item, offering: Offering | None, now: datetime) -> DashboardRow:
    policy = quiz_policy_for(quiz=item.quiz, offering=offering, user=user)
    window = Window(policy.opens_at, policy.due_at, policy.late_until, policy.max_attempts)
    questions = list(item.quiz.questions.filter(is_active=True).values_list("pk", flat=True))
    per_question = (
        Attempt.objects.filter(user=user, question_id__in=questions, offering=offering)
        .values("question_id")
        .annotate(n=Count("id"), best=Max("score"), right=Count("id", filter=Q(is_correct=True)))
    )
    answered = {row["question_id"]: row for row in per_question}
    done = sum(1 for r in answered.values() if r["right"] or r["n"] >= policy.max_attempts)
    if not answered:
        status = window.timed_status(now)
    elif done == len(questions) or policy.is_closed(now):
        status = GRADED
    else:
        status = IN_PROGRESS
    best = sum((r["best"] for r in answered.values()), Decimal(0)) if answered else None
    return DashboardRow(
        item=item,
        title="",
        url=reverse("quiz-detail", args=[item.slug]),
        window=window,
        status=status,
        attempts_left=0 if questions and done == len(questions) else policy.max_attempts,
        attempts_per_question=True,
        best_score=best,
    )


def dashboard_for(
    *, user: User, language: str | None, now: datetime | None = None
) -> list[DashboardRow]:
    """The user's rows: due soon first (nearest deadline first), then in chapter order."""
    now = now or timezone.now()
    items = [
        i
        for i in item_list_published(kinds=DASHBOARD_KINDS).select_related("quiz")
        if i.kind != ItemKind.QUIZ or hasattr(i, "quiz")
    ]
    enrolments = _enrolments(user, items)
    offerings = [e.offering for e in enrolments.values() if e is not None]
    policies = {o.pk: policies_for(offering=o, items=items, user=user) for o in offerings}
    reads = _exercise_reads(user, offerings)
    rows = []
    for item in items:
        enrolment = enrolments[item.course_id]
        offering = enrolment.offering if enrolment else None
        if item.kind == ItemKind.QUIZ:
            row = _quiz_row(user=user, item=item, offering=offering, now=now)
        else:
            policy = policies[offering.pk][item.pk] if offering else None
            window = Window(
                policy.opens_at if policy else None,
                policy.due_at if policy else None,
                policy.late_until if policy else None,
                policy.max_attempts if policy else None,
            )
            row = _exercise_row(item=item, offering=offering, window=window, reads=reads, now=now)
        row.title = item.title(language)
        row.deadline = row.window.next_deadline(now)
        row.due_soon = (
            row.deadline is not None and row.deadline - now <= DUE_SOON and not row.is_finished
        )
        rows.append(row)
    soon = sorted((r for r in rows if r.due_soon), key=lambda r: r.deadline or now)
    return soon + [r for r in rows if not r.due_soon]
