"""Reads for submissions: who may see one, and what the API and pages show of it."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import ngettext

from courseware.courses.models import Item, ItemKind, Offering
from courseware.courses.selectors import offering_ids_staffed_by, policy_for, user_is_staff_of
from courseware.fleet.selectors import live_worker_counts
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
from graders.report.schema import upgrade
from graders.spec.exercise import worker_kind_allowed

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


@lru_cache(maxsize=64)
def _worker_kinds(folder: Path, content_hash: str) -> tuple[str, ...] | None:
    # Keyed on the content hash too: a sync that changes the exercise changes its kinds.
    try:
        return load_exercise(folder).worker_kinds
    except SpecError:
        return None  # a broken spec is the grader's to report


def worker_kinds_for(item: Item) -> tuple[str, ...]:
    """The worker kinds that may grade this item (exercise.toml's `worker_kinds`, else its
    `devices`; "cuda" admits every CUDA worker). Notebooks are graded on CPU workers."""
    if item.kind == ItemKind.EXERCISE:
        folder = Path(settings.GRADERS_EXERCISES_ROOT) / item.source_path
        kinds = _worker_kinds(folder, item.content_hash)
        if kinds:
            return kinds
    return tuple(str(kind) for kind in item.device_kinds)


def grading_device_for(item: Item) -> str | None:
    """The worker kind a submission of this item goes to when the student names none: the
    site's own (settings.GRADING_DEVICE_KIND) if the item takes it; else, of the kinds the item
    takes that have live workers, the one with the least queued work per worker; else the
    item's first kind. None when the item names no kind at all."""
    allowed = worker_kinds_for(item)
    if not allowed:
        return None
    device = str(settings.GRADING_DEVICE_KIND)
    if worker_kind_allowed(device, allowed):
        return device
    return least_loaded_kind(allowed) or allowed[0]


def least_loaded_kind(allowed: tuple[str, ...]) -> str | None:
    """Of the live workers' kinds that `allowed` admits, the one with the fewest queued
    submissions per live worker (the first listed on a tie); None when no such worker is up."""
    live = {k: n for k, n in live_worker_counts().items() if worker_kind_allowed(k, allowed)}
    if not live:
        return None
    queued = dict(
        Submission.objects.filter(status=Status.QUEUED, device_kind__in=list(live))
        .values_list("device_kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    return min(sorted(live), key=lambda kind: queued.get(kind, 0) / live[kind])


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


@dataclass(frozen=True)
class FairQueue:
    """A worker kind's queue as workers take it."""

    order: list[int]  # the queued submissions' ids, the next one to grade first
    running: int  # submissions of this kind a worker is grading now


def fair_queue(*, kind: str) -> FairQueue:
    """The queued submissions of a worker kind in the order workers claim them. Fair across
    students: everyone's first pending submission comes before anyone's second (one being
    graded counts as its student's first), and within that, who joined the queue first. Read
    from the database alone, so the order holds on any broker."""
    rows = list(
        Submission.objects.filter(device_kind=kind, status__in=PENDING_STATUSES)
        .order_by("queued_at", "pk")
        .values_list("pk", "user_id", "status", "queued_at")
    )
    pending_before = Counter(user for _pk, user, status, _at in rows if status == Status.RUNNING)
    keyed: list[tuple[int, datetime, int]] = []
    for pk, user, status, queued_at in rows:
        if status == Status.QUEUED:
            keyed.append((pending_before[user], queued_at, pk))
            pending_before[user] += 1
    keyed.sort()
    return FairQueue(order=[pk for _n, _at, pk in keyed], running=len(rows) - len(keyed))


def queue_position(submission: Submission) -> int | None:
    """Its 1-based place in its worker kind's fair queue while queued: 1 + the submissions
    being graded on that kind + those the fair order puts before it. None once a worker has
    it."""
    if submission.status != Status.QUEUED:
        return None
    queue = fair_queue(kind=submission.device_kind)
    if submission.pk not in queue.order:
        return None  # claimed a moment ago
    return queue.running + queue.order.index(submission.pk) + 1


RECENT_GRADINGS = 20  # the wait estimate averages this many latest gradings


def mean_grading_s(*, item_id: int, kind: str) -> float | None:
    """The mean worker time of the latest gradings of this exercise on this worker kind (of
    any exercise on it when this one has none yet); None before any. The mean, not the
    median: the wait is a sum of the gradings ahead, and a queue mixes submissions refused in
    milliseconds with full gradings of seconds, where a median can say nearly nothing."""
    timed = Grading.objects.filter(submission__device_kind=kind, duration_s__isnull=False)
    for scope in (timed.filter(submission__item_id=item_id), timed):
        durations = [
            float(d)
            for d in scope.order_by("-pk").values_list("duration_s", flat=True)[:RECENT_GRADINGS]
            if d is not None
        ]
        if durations:
            return statistics.fmean(durations)
    return None


def estimated_wait_s(submission: Submission, position: int | None) -> int | None:
    """Seconds until a queued submission is graded, as measured: the mean recent grading
    time × its place in the queue / the live workers of its kind. None when it is not
    queued, no worker of its kind is up, or nothing was graded on that kind yet."""
    if position is None:
        return None
    workers = live_worker_counts().get(submission.device_kind, 0)
    if not workers:
        return None
    mean = mean_grading_s(item_id=submission.item_id, kind=submission.device_kind)
    if mean is None:
        return None
    return max(1, round(mean * position / workers))


# Being graded, or next in line: a grading takes about 2 s, and polls 1.5 s apart showed its
# grade 1.3 s after it was ready at the median (bench.load, one student). Only as many
# submissions run at once as there are grading slots, so asking this often costs little.
POLL_RUNNING_S = 0.5
POLL_SOON_S = 1.5  # queued with no estimate yet: as the page always did
POLL_AT_MOST_S = 10.0
POLL_WAIT_SHARE = 0.25  # ask again after a quarter of the estimated wait


def poll_after_s(status: str, wait_s: float | None) -> float | None:
    """Seconds a client following a submission should wait before asking again; None once it
    is finished. Soon while it is being graded or near the front, less often the further
    back it waits: in a deadline rush most of a class is far back, and polls that can only
    say "still waiting" would load the site that has to take the next submissions. Asking
    again after a quarter of the estimated wait keeps the delay before a student sees the
    grade within about a quarter of what was left when they last asked."""
    if status not in (Status.QUEUED, Status.RUNNING):
        return None
    if status == Status.RUNNING:
        return POLL_RUNNING_S
    if wait_s is None:
        return POLL_SOON_S
    return round(min(POLL_AT_MOST_S, max(POLL_RUNNING_S, wait_s * POLL_WAIT_SHARE)), 1)


@dataclass(frozen=True)
class GradingBudget:
    """A student's grading seconds for the site's day (settings.GRADING_SECONDS_PER_DAY)."""

    limit_s: int
    used_s: float
    resets_at: datetime

    @property
    def spent(self) -> bool:
        return self.used_s >= self.limit_s


def grading_budget_for(*, user: User, now: datetime | None = None) -> GradingBudget | None:
    """How much of today's grading time this user's submissions took; None when the site sets
    no budget. The day is the site's (settings.TIME_ZONE), not the student's, so a time-zone
    cookie cannot start a new day early. Counted from each submission's first grading's
    recorded duration, and from each automatic regrade of provisional points (a grading that
    follows a provisional one, asked for by no one: courseware/submissions/provisional.py),
    which is load the student's submission puts on the workers (a TA's regrade of a
    provisional submission counts as that regrade would: it sets no ``requested_by`` today).
    Any other regrade a person asked for, or a grader failure, costs nothing."""
    limit = int(settings.GRADING_SECONDS_PER_DAY)
    if limit <= 0:
        return None
    zone = timezone.get_default_timezone()
    today = timezone.localtime(now or timezone.now(), zone).date()
    start = datetime.combine(today, time.min, tzinfo=zone)
    resets_at = datetime.combine(today + timedelta(days=1), time.min, tzinfo=zone)
    earlier = Grading.objects.filter(submission_id=OuterRef("submission_id"), pk__lt=OuterRef("pk"))
    previous_provisional = Subquery(earlier.order_by("-pk").values("provisional")[:1])
    used = (
        Grading.objects.filter(
            submission__user=user, created_at__gte=start, duration_s__isnull=False
        )
        .annotate(after_provisional=previous_provisional)
        .filter(~Exists(earlier) | Q(requested_by__isnull=True, after_provisional=True))
        .aggregate(total=Sum("duration_s"))["total"]
    )
    return GradingBudget(limit_s=limit, used_s=float(used or 0.0), resets_at=resets_at)


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
    position = queue_position(submission)
    wait_s = estimated_wait_s(submission, position)
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
        "queue_position": position,
        # Seconds, from measured grading times; null when unknown (see estimated_wait_s).
        "estimated_wait_s": wait_s,
        # When to ask again (null once finished): exercise.js, the client and the load
        # bench's students all follow it.
        "poll_after_s": poll_after_s(submission.status, wait_s),
        "review_reason": submission.review_reason or None,
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
