"""Reads for submissions: who may see one, and what the API and pages show of it."""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet

from courseware.courses.models import Item, ItemKind, Offering
from courseware.courses.selectors import offering_ids_staffed_by, policy_for, user_is_staff_of
from courseware.submissions.models import (
    PENDING_STATUSES,
    Grading,
    ManualGrade,
    Status,
    Submission,
    SubmissionKind,
    Verdict,
)
from graders import SpecError, load_exercise
from graders.report_schema import upgrade

# The report fields a student sees; `internal_error` and the like stay with the staff.
STUDENT_HIDDEN_REPORT_KEYS = frozenset({"internal_error"})


def submission_get_visible(*, user: User, submission_id: int) -> Submission | None:
    """The submission if this user may see it: its author, or staff of its offering."""
    submission = (
        Submission.objects.select_related("item", "offering", "user")
        .filter(pk=submission_id)
        .first()
    )
    if submission is None:
        return None
    if submission.user_id == user.pk or user_is_staff_of(user=user, offering=submission.offering):
        return submission
    return None


def submission_list_for(*, user: User, item_id: int | None = None) -> QuerySet[Submission]:
    qs = Submission.objects.filter(user=user).select_related("item")
    return qs.filter(item_id=item_id) if item_id is not None else qs


def submission_latest_code(*, user: User, item: Item) -> str | None:
    """The code of the user's newest submission of this item, to reopen the editor with."""
    return (
        Submission.objects.filter(user=user, item=item, kind=SubmissionKind.CODE)
        .values_list("source", flat=True)
        .first()
    )


def counted_attempts(*, user: User, offering_id: int) -> QuerySet[Submission]:
    """The user's submissions in the offering that count against an attempt limit.

    A grader failure or a rejected upload costs the student nothing.
    """
    return (
        Submission.objects.filter(user=user, offering_id=offering_id)
        .exclude(status=Status.FAILED)
        .exclude(gradings__verdict=Verdict.REJECTED)
    )


def attempts_used(*, user: User, item: Item, offering_id: int) -> int:
    return counted_attempts(user=user, offering_id=offering_id).filter(item=item).distinct().count()


def attempts_used_by_item(*, user: User, offering_id: int) -> dict[int, int]:
    """attempts_used for every item at once: item id → attempts counted."""
    rows = (
        counted_attempts(user=user, offering_id=offering_id)
        .values("item_id")
        .annotate(n=Count("id", distinct=True))
    )
    return {row["item_id"]: row["n"] for row in rows}


def grading_device_for(item: Item) -> str | None:
    """The device kind a submission of this item is graded on when the student names none:
    the site's own (settings.GRADING_DEVICE_KIND) if the item takes it, else the item's first
    (e.g. a notebook, CPU only, on a GPU site). None when the item names no device at all."""
    if not item.device_kinds:
        return None
    device = str(settings.GRADING_DEVICE_KIND)
    return device if device in item.device_kinds else str(item.device_kinds[0])


@lru_cache(maxsize=64)
def _source_limit(folder: Path, content_hash: str) -> int | None:
    # Keyed on the content hash too: a sync that changes the exercise changes the limit.
    try:
        return load_exercise(folder).limits.source_bytes
    except SpecError:
        return None  # a broken spec is the grader's to report; it refuses nothing here


def source_limit_bytes(item: Item) -> int | None:
    """The largest source, in UTF-8 bytes, the grader accepts for this coding exercise
    (`[limits] source_bytes` of its exercise.toml); None for other items."""
    if item.kind != ItemKind.EXERCISE:
        return None
    folder = Path(settings.GRADERS_EXERCISES_ROOT) / item.source_path
    return _source_limit(folder, item.content_hash)


def queue_position(submission: Submission) -> int | None:
    """Its 1-based place in its device's queue while queued: 1 + the pending submissions
    ahead of it (running ones hold a worker; queued ones were queued earlier). None once a
    worker has it. A regrade queues again, so the order is by when it was last queued."""
    if submission.status != Status.QUEUED:
        return None
    same_queue = Submission.objects.filter(
        device_kind=submission.device_kind, status__in=PENDING_STATUSES
    ).exclude(pk=submission.pk)
    ahead = same_queue.filter(
        Q(status=Status.RUNNING)
        | Q(status_changed_at__lt=submission.status_changed_at)
        | Q(status_changed_at=submission.status_changed_at, pk__lt=submission.pk)
    ).count()
    return ahead + 1


def submissions_with_scores(qs: QuerySet[Submission]) -> QuerySet[Submission]:
    """`qs` with what submission_effective_score reads loaded alongside, for a list of them.

    The item and offering are joined in; gradings, overrides and hand grades come in one query
    each. Read row by row, every submission would cost a query for each of them instead, so a
    gradebook or a list would grow with the class. Pass a LatePenalties for the late ones.
    """
    return qs.select_related("item", "offering").prefetch_related(
        # Plain names, so each model's own ordering (newest first) holds in the cache, as
        # current_grading, overrides.first() and latest_manual_grades expect.
        "gradings",
        "overrides",
        "manual_grades",
    )


class LatePenalties:
    """Each (offering, item)'s late penalty per day, asked of its policy once.

    A list of submissions holds the same few (offering, item) pairs many times over; this keeps
    the policy reads to one per pair rather than one per late submission.
    """

    def __init__(self) -> None:
        self._per_day: dict[tuple[int, int], Decimal] = {}

    def per_day(self, *, offering: Offering, item: Item) -> Decimal:
        key = (offering.pk, item.pk)
        if key not in self._per_day:
            self._per_day[key] = policy_for(offering=offering, item=item).late_penalty_per_day
        return self._per_day[key]


def late_factor(submission: Submission, *, penalties: LatePenalties | None = None) -> Decimal:
    if not submission.is_late or submission.offering is None:
        return Decimal(1)
    penalty = (penalties or LatePenalties()).per_day(
        offering=submission.offering, item=submission.item
    )
    return max(Decimal(0), Decimal(1) - penalty * submission.late_days)


def latest_manual_grades(submission: Submission) -> dict[str, ManualGrade]:
    latest: dict[str, ManualGrade] = {}
    for grade in submission.manual_grades.all():  # newest first
        latest.setdefault(grade.grade_id, grade)
    return latest


def notebook_cells(submission: Submission, grading: Grading | None) -> list[dict[str, Any]]:
    """The report's cells, with each hand-graded cell's latest score and comment filled in."""
    if grading is None:
        return []
    manual = latest_manual_grades(submission)
    cells = []
    for cell in grading.report.get("cells") or []:
        cell = dict(cell)
        grade = manual.get(cell.get("grade_id", ""))
        if cell.get("needs_manual_grade") and grade is not None:
            cell["score"] = float(grade.score)
            cell["comment"] = grade.comment
            cell["graded_by_person"] = True
        cells.append(cell)
    return cells


def _graded_score(submission: Submission, grading: Grading) -> Decimal | None:
    if grading.report.get("cells"):
        # A notebook: autograded cells from the report, hand-graded ones from the people.
        return sum(
            (Decimal(str(c.get("score") or 0)) for c in notebook_cells(submission, grading)),
            Decimal(0),
        )
    return grading.score


def submission_effective_score(
    submission: Submission, grading: Grading | None, *, penalties: LatePenalties | None = None
) -> Decimal | None:
    """A person's latest override wins; else the grading's score less any late penalty.

    For many submissions, load them with submissions_with_scores and share one LatePenalties.
    """
    override = submission.overrides.first()
    if override is not None:
        return override.score
    if grading is None:
        return None
    score = _graded_score(submission, grading)
    if score is None:
        return None
    return (score * late_factor(submission, penalties=penalties)).quantize(Decimal("0.001"))


def submission_as_api(submission: Submission, *, for_staff: bool) -> dict[str, Any]:
    grading = submission.current_grading
    finished = submission.status in (Status.GRADED, Status.NEEDS_REVIEW, Status.FAILED)
    report: dict[str, Any] | None = None
    if grading is not None and finished:
        # Stored reports are never rewritten; read them in today's shape, whatever their age.
        stored = upgrade(
            grading.report,
            exercise=submission.item.slug,
            max_score=float(submission.item.max_score),
        )
        report = {
            k: v for k, v in stored.items() if for_staff or k not in STUDENT_HIDDEN_REPORT_KEYS
        }
    score = submission_effective_score(submission, grading) if finished else None
    if report is not None and report.get("cells"):
        report["cells"] = notebook_cells(submission, grading)
    return {
        "id": submission.pk,
        "exercise": submission.item.slug,
        "status": submission.status,
        "verdict": grading.verdict if (grading is not None and finished) else None,
        "score": float(score) if score is not None else None,
        "max_score": float(submission.item.max_score),
        "report": report,
        "created_at": submission.created_at.isoformat(),
        "is_late": submission.is_late,
        "device": submission.device_kind,
        "queue_position": queue_position(submission),
    }


def review_queue_for(*, user: User) -> QuerySet[Submission]:
    """Submissions waiting for a person, in the offerings this user is staff of."""
    qs = Submission.objects.filter(status=Status.NEEDS_REVIEW).select_related("item", "user")
    offering_ids = offering_ids_staffed_by(user=user)
    if offering_ids is not None:
        qs = qs.filter(offering_id__in=offering_ids)
    return qs.order_by("created_at", "id")
