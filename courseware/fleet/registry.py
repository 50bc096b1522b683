"""Writes to the fleet registry. Each worker writes only its own row."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone

from courseware.fleet.identity import WorkerIdentity
from courseware.fleet.models import Worker
from courseware.fleet.selectors import gone_cutoff

logger = logging.getLogger(__name__)


class CoreTaken(Exception):
    """Another live worker on this machine already times its gradings on this core."""


def core_taken_by(identity: WorkerIdentity, *, now: datetime | None = None) -> Worker | None:
    """The live worker of this machine, other than this one, whose gradings are timed on the
    core this one would use: two such workers would distort each other's figures."""
    if identity.core is None:
        return None
    return (
        Worker.objects.filter(
            hostname=identity.hostname,
            core=identity.core,
            stopped_at__isnull=True,
            heartbeat_at__gte=gone_cutoff(now),
        )
        .exclude(name=identity.name)
        .first()
    )


def worker_register(identity: WorkerIdentity, *, peaks: dict[str, Any] | None) -> Worker:
    """Record this worker as started now. CoreTaken when another live worker of this machine
    times on the same core; its message says which slot to use instead."""
    other = core_taken_by(identity)
    if other is not None:
        raise CoreTaken(
            f"Worker {identity.name} (GRADERS_SLOT={identity.slot}) would time its gradings on "
            f"core {identity.core}, which worker {other.name} (slot {other.slot}) already uses "
            f"on this machine. Give every worker on a machine its own GRADERS_SLOT, below the "
            f"number of cores."
        )
    now = timezone.now()
    worker, _made = Worker.objects.update_or_create(
        name=identity.name,
        defaults={
            "kind": identity.kind,
            "hostname": identity.hostname,
            "slot": identity.slot,
            "core": identity.core,
            "pid": identity.pid,
            "peaks": peaks,
            "started_at": now,
            "heartbeat_at": now,
            "stopped_at": None,
            "grading": None,
            "grading_since": None,
        },
    )
    logger.info("Registered worker %s (%s, slot %s, core %s)", *_described(identity))
    return worker


def _described(identity: WorkerIdentity) -> tuple[str, str, int, int | None]:
    return identity.name, identity.kind, identity.slot, identity.core


def worker_beat(identity: WorkerIdentity) -> None:
    """The heartbeat. A row that went missing (deleted in the admin) is made again."""
    now = timezone.now()
    if not Worker.objects.filter(name=identity.name).update(heartbeat_at=now, stopped_at=None):
        Worker.objects.update_or_create(
            name=identity.name,
            defaults={
                "kind": identity.kind,
                "hostname": identity.hostname,
                "slot": identity.slot,
                "core": identity.core,
                "pid": identity.pid,
                "started_at": now,
                "heartbeat_at": now,
            },
        )


def worker_grading(*, name: str, submission_id: int) -> None:
    """This worker claimed a submission and is grading it now."""
    Worker.objects.filter(name=name).update(grading_id=submission_id, grading_since=timezone.now())


def worker_idle(*, name: str, submission_id: int | None = None) -> None:
    """This worker is done with `submission_id` (any submission when None)."""
    rows = Worker.objects.filter(name=name)
    if submission_id is not None:
        rows = rows.filter(Q(grading_id=submission_id) | Q(grading__isnull=True))
    rows.update(grading=None, grading_since=None)


def worker_stopped(*, name: str) -> None:
    """A clean shutdown: the worker is gone at once rather than after its heartbeat ages."""
    Worker.objects.filter(name=name).update(
        stopped_at=timezone.now(), grading=None, grading_since=None
    )
