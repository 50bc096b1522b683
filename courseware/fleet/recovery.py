"""Taking work back from workers that were lost, and waking workers whose wake-up was lost.

The database is the truth: a running submission names the worker process holding it (its
Celery node name and pid, services.Holder). That worker is lost when

* its heartbeat stopped for FLEET_GONE_AFTER_S (the whole worker died, or its machine or
  network did), or it registered again since it claimed (it restarted): any worker's
  heartbeat thread, the beat sweep and a worker starting all check this;
* the claiming process died while its worker lives on (a pool child killed mid-grading): on
  the claimer's own machine the pid says so, which that worker checks at every heartbeat and
  before it takes its next submission (a message the dead child held comes back to it).

Each loss goes through services.submission_reclaim, conditional on the claim token, so a loss
noticed by several workers at once is acted on once.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from courseware.fleet.identity import WorkerIdentity
from courseware.fleet.models import Worker
from courseware.fleet.selectors import holder_is_lost
from courseware.submissions import profiles_later, services
from courseware.submissions.models import Status, Submission

logger = logging.getLogger(__name__)


def process_alive(pid: int | None) -> bool:
    """Whether a process of this machine still runs (a zombie, killed but not yet reaped by
    its parent, has died)."""
    if pid is None or pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: never take work from a process that may be running
    # "pid (comm) S ...": the state follows the last ')' (comm may hold spaces and parens).
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def reclaim_from_lost_workers() -> int:
    """Reclaim every running submission whose worker is gone or restarted since it claimed.
    Returns how many were reclaimed."""
    running = list(
        Submission.objects.filter(status=Status.RUNNING).values_list(
            "pk", "claim_token", "claimed_by", "claimed_at", "status_changed_at"
        )
    )
    if not running:
        return 0
    holders = {w.name: w for w in Worker.objects.filter(name__in={r[2] for r in running})}
    now = timezone.now()
    reclaimed = 0
    for submission_id, token, name, claimed_at, running_since in running:
        # A claim made before claims were recorded has no time of its own: it began running then.
        since = claimed_at or running_since
        if holder_is_lost(holders.get(name), claimed_at=since, now=now):
            why = f"worker {name or '(unnamed)'} is gone"
            if services.submission_reclaim(submission_id=submission_id, claim_token=token, why=why):
                reclaimed += 1
    return reclaimed


def reclaim_from_dead_processes(identity: WorkerIdentity) -> int:
    """Reclaim the submissions this worker's own processes claimed and no longer run (its pool
    child was killed). Only this machine can tell, so each worker checks its own."""
    mine = Submission.objects.filter(status=Status.RUNNING, claimed_by=identity.name)
    reclaimed = 0
    for submission_id, token, pid in mine.values_list("pk", "claim_token", "claimed_pid"):
        if not process_alive(pid):
            why = f"process {pid} of worker {identity.name} died"
            if services.submission_reclaim(submission_id=submission_id, claim_token=token, why=why):
                reclaimed += 1
    return reclaimed


def wake_if_idle(identity: WorkerIdentity) -> bool:
    """An idle worker whose kind has work queued for a while sends itself a wake-up: the
    message for that work was lost (a broker emptied or restarted). True when it sent one."""
    grading = Worker.objects.filter(name=identity.name).values_list("grading_id", flat=True)
    if not grading.exists() or grading.first() is not None:
        return False
    cutoff = timezone.now() - timedelta(seconds=int(settings.SUBMISSIONS_WAKE_AFTER_S))
    waiting = (
        Submission.objects.filter(
            status=Status.QUEUED, device_kind=identity.kind, status_changed_at__lt=cutoff
        )
        .order_by("queued_at", "pk")
        .values_list("pk", flat=True)
        .first()
    )
    if waiting is None:
        return False
    logger.info("Worker %s is idle while submission %s waits; waking it", identity.name, waiting)
    services.submission_enqueue(submission_id=waiting, queue=identity.kind)
    return True


def sweep() -> int:
    """The periodic sweep (celery beat, and each worker as it starts): reclaim from lost
    workers, then send again what waited too long, and the task for profiles left waiting
    by a worker that died. Returns how many submissions were sent again."""
    sent = reclaim_from_lost_workers() + services.submission_requeue_stale()
    profiles_later.send_for_forgotten()
    return sent
