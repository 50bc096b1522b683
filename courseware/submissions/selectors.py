"""Reads for submissions: who may see one, and what the API and pages show of it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Count, Max, Q, QuerySet
from django.urls import reverse
from django.utils.translation import ngettext

from courseware.courses.models import Item, ItemKind, Offering
from courseware.courses.selectors import offering_ids_staffed_by, policy_for, user_is_staff_of
from courseware.submissions.models import (
    PENDING_STATUSES,
    Grading,
    ManualGrade,
    RegradeBatch,
    SavedComment,
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


def hand_graded_waiting(submission: Submission, grading: Grading | None) -> list[str]:
    """The grade_ids of the hand-graded cells that no person has scored yet."""
    if grading is None:
        return []
    scored = latest_manual_grades(submission)
    return [
        str(cell.get("grade_id"))
        for cell in grading.report.get("cells") or []
        if cell.get("needs_manual_grade") and cell.get("grade_id") not in scored
    ]


# The engine's sentence (graders.notebooks.grading), written when it graded, in English.
_ENGINE_WAITING = re.compile(r"\s*\d+ answer\(s\) will be graded by a person\.")


def notebook_message(message: str, *, waiting: int) -> str:
    """The grader's message with its "will be graded by a person" sentence made true today:
    gone once people scored every hand-graded cell, else the number still waiting."""
    message = _ENGINE_WAITING.sub("", message or "")
    if waiting:
        message += " " + ngettext(
            "%(n)d answer will be graded by a person.",
            "%(n)d answers will be graded by a person.",
            waiting,
        ) % {"n": waiting}
    return message.strip()


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
        waiting = hand_graded_waiting(submission, grading)
        report["needs_manual_grade"] = bool(waiting)
        report["message"] = notebook_message(str(report.get("message") or ""), waiting=len(waiting))
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
        "overridden": bool(submission.overrides.all()) if finished else False,
        **_notebook_link(submission),
    }


def _notebook_link(submission: Submission) -> dict[str, str]:
    """The API route of the submitted notebook's text, for a notebook submission."""
    if submission.kind != SubmissionKind.NOTEBOOK:
        return {}
    return {"notebook_url": reverse("api-submission-notebook", args=[submission.pk])}


def review_queue_for(*, user: User) -> QuerySet[Submission]:
    """Submissions waiting for a person, in the offerings this user is staff of."""
    qs = Submission.objects.filter(status=Status.NEEDS_REVIEW).select_related("item", "user")
    offering_ids = offering_ids_staffed_by(user=user)
    if offering_ids is not None:
        qs = qs.filter(offering_id__in=offering_ids)
    return qs.order_by("created_at", "id")


def next_in_review_queue(*, user: User, after: Submission) -> Submission | None:
    """The submission to grade after `after`: the next one in the queue's order, or the first
    when `after` was the last (or is no longer waiting); None when nothing else waits."""
    queue = review_queue_for(user=user).exclude(pk=after.pk)
    later = queue.filter(
        Q(created_at__gt=after.created_at) | Q(created_at=after.created_at, pk__gt=after.pk)
    ).first()
    return later or queue.first()


def saved_comments_for(*, item: Item) -> dict[str, list[SavedComment]]:
    """The item's saved comments by cell (grade_id; "" for overrides), most used first."""
    by_cell: dict[str, list[SavedComment]] = {}
    for comment in SavedComment.objects.filter(item=item):
        by_cell.setdefault(comment.grade_id, []).append(comment)
    return by_cell


@dataclass(frozen=True)
class RegradeProgress:
    total: int
    regraded: int  # a grading was written since the batch began
    queued: int
    running: int

    @property
    def done(self) -> bool:
        return self.queued == 0 and self.running == 0

    def as_json(self) -> dict[str, int | bool]:
        return {
            "total": self.total,
            "regraded": self.regraded,
            "queued": self.queued,
            "running": self.running,
            "done": self.done,
        }


def regrade_progress(batch: RegradeBatch) -> RegradeProgress:
    """How far a batch regrade got, read from its submissions' statuses and new gradings."""
    submissions = batch.submissions.all()
    counts = dict(submissions.values("status").annotate(n=Count("id")).values_list("status", "n"))
    regraded = (
        submissions.exclude(status__in=PENDING_STATUSES)
        .filter(gradings__created_at__gte=batch.created_at)
        .distinct()
        .count()
    )
    return RegradeProgress(
        total=sum(counts.values()),
        regraded=regraded,
        queued=counts.get(Status.QUEUED, 0),
        running=counts.get(Status.RUNNING, 0),
    )


def regrade_batch_visible(*, user: User, batch_id: int) -> RegradeBatch | None:
    """The batch if this user is staff of its offering."""
    batch = RegradeBatch.objects.select_related("item", "offering").filter(pk=batch_id).first()
    if batch is None or not user_is_staff_of(user=user, offering=batch.offering):
        return None
    return batch


def regrade_candidates(*, item: Item, offering: Offering, scope: str) -> QuerySet[Submission]:
    """The submissions a batch regrade of this item in this offering takes: every one, or the
    latest of each student ("latest")."""
    qs = Submission.objects.filter(item=item, offering=offering)
    if scope == "all":
        return qs
    latest_ids = [
        row["latest"] for row in qs.values("user_id").annotate(latest=Max("id")).order_by()
    ]
    return Submission.objects.filter(pk__in=latest_ids)


def offerings_staffed(*, user: User) -> QuerySet[Offering]:
    """The offerings whose work this user may regrade (all of them for a superuser)."""
    ids = offering_ids_staffed_by(user=user)
    qs = Offering.objects.select_related("course").order_by("-id")
    return qs if ids is None else qs.filter(pk__in=ids)


def regrade_batches_for(*, user: User) -> QuerySet[RegradeBatch]:
    """The latest batch regrades in the offerings this user is staff of."""
    qs = RegradeBatch.objects.select_related("item", "offering", "requested_by")
    return qs.filter(offering__in=offerings_staffed(user=user))[:20]
