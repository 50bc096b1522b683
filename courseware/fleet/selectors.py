"""Reads of the fleet: which workers are live, their states, and the queues per worker kind."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Min, QuerySet
from django.utils import timezone

from courseware.fleet.models import Worker, WorkerState
from courseware.submissions.models import ReviewReason, Status, Submission

# Gone workers stay on the fleet page this long after their last heartbeat.
GONE_SHOWN_FOR = timedelta(days=7)


def gone_cutoff(now: datetime | None = None) -> datetime:
    """A worker whose last heartbeat is older than this is gone."""
    return (now or timezone.now()) - timedelta(seconds=int(settings.FLEET_GONE_AFTER_S))


def live_workers(*, now: datetime | None = None) -> QuerySet[Worker]:
    return Worker.objects.filter(stopped_at__isnull=True, heartbeat_at__gte=gone_cutoff(now))


def live_worker_counts(*, now: datetime | None = None) -> dict[str, int]:
    """Live workers per worker kind."""
    rows = live_workers(now=now).values("kind").annotate(n=Count("id")).order_by()
    return {row["kind"]: row["n"] for row in rows}


def worker_state(worker: Worker, *, now: datetime | None = None) -> WorkerState:
    if worker.stopped_at is not None or worker.heartbeat_at < gone_cutoff(now):
        return WorkerState.GONE
    return WorkerState.BUSY if worker.grading_id is not None else WorkerState.IDLE


def holder_is_lost(
    holder: Worker | None, *, claimed_at: datetime | None, now: datetime | None = None
) -> bool:
    """Whether the worker named on a claim can no longer finish it: it is gone, or it started
    again since it claimed (the process that claimed died with the old run). A claim naming no
    registered worker counts as lost once it is older than a heartbeat would allow."""
    cutoff = gone_cutoff(now)
    if holder is None:
        return claimed_at is None or claimed_at < cutoff
    if worker_state(holder, now=now) == WorkerState.GONE:
        return True
    return claimed_at is not None and holder.started_at > claimed_at


@dataclass(frozen=True)
class WorkerRow:
    worker: Worker
    state: WorkerState

    @property
    def state_badge(self) -> str:
        """The site's badge colours: green idle, blue busy, red gone."""
        return {"idle": "graded", "busy": "running", "gone": "closed"}[self.state]


@dataclass(frozen=True)
class QueueRow:
    kind: str
    queued: int
    running: int
    live_workers: int
    busy_workers: int
    oldest_queued_at: datetime | None


@dataclass(frozen=True)
class FleetOverview:
    workers: list[WorkerRow]
    queues: list[QueueRow]
    waiting_for_ta: int  # lost their worker too often and went to a person
    gone_after_s: int


def fleet_overview(*, now: datetime | None = None) -> FleetOverview:
    now = now or timezone.now()
    workers = list(
        Worker.objects.filter(heartbeat_at__gte=now - GONE_SHOWN_FOR).select_related(
            "grading__item"
        )
    )
    rows = [WorkerRow(w, worker_state(w, now=now)) for w in workers]
    pending = (
        Submission.objects.filter(status__in=(Status.QUEUED, Status.RUNNING))
        .values("device_kind", "status")
        .annotate(n=Count("id"), oldest=Min("queued_at"))
        .order_by()
    )
    counts: dict[str, dict[str, int]] = {}
    oldest: dict[str, datetime] = {}
    for row in pending:
        counts.setdefault(row["device_kind"], {})[row["status"]] = row["n"]
        if row["status"] == Status.QUEUED:
            oldest[row["device_kind"]] = row["oldest"]
    live: dict[str, int] = {}
    busy: dict[str, int] = {}
    for r in rows:
        if r.state != WorkerState.GONE:
            live[r.worker.kind] = live.get(r.worker.kind, 0) + 1
            busy[r.worker.kind] = busy.get(r.worker.kind, 0) + (r.state == WorkerState.BUSY)
    kinds = sorted(set(counts) | set(live))
    queues = [
        QueueRow(
            kind=kind,
            queued=counts.get(kind, {}).get(Status.QUEUED, 0),
            running=counts.get(kind, {}).get(Status.RUNNING, 0),
            live_workers=live.get(kind, 0),
            busy_workers=busy.get(kind, 0),
            oldest_queued_at=oldest.get(kind),
        )
        for kind in kinds
    ]
    waiting = Submission.objects.filter(
        status=Status.NEEDS_REVIEW, review_reason=ReviewReason.WORKERS_LOST
    ).count()
    return FleetOverview(
        workers=rows,
        queues=queues,
        waiting_for_ta=waiting,
        gone_after_s=int(settings.FLEET_GONE_AFTER_S),
    )
