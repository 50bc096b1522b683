"""Profiles left for later: in a rush, the next grade comes before this one's profile.

A grading's profile (the top operators of one call) is informative: it never changes a grade,
and taking it costs a worker a second or more. When other submissions of the same worker kind
are waiting as a grade becomes final, the worker stores the grade with `profile_pending` and
goes on to the next submission. A `graders.take_waiting_profiles` task, sent to the same
queue behind the wake-ups already there, takes the profiles once nothing of that kind is
queued (`take_waiting`), each in a fresh sandbox; the report gains its profile then. A worker
that dies holding one leaves its claim to expire, and the beat's sweep sends the task again
(`send_for_forgotten`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from celery import current_app
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from courseware.submissions.models import Grading, Status, Submission
from graders.spec.exercise import worker_kind_device

logger = logging.getLogger(__name__)

PROFILE_TASK_NAME = "graders.take_waiting_profiles"
# A claim older than this belongs to a worker that died while profiling: take it again.
CLAIM_EXPIRES = timedelta(minutes=5)
# Profiles one task takes before it hands over to a task sent again: far inside the tasks'
# time limit (a profile takes seconds).
PER_TASK = 20


@dataclass(frozen=True)
class ProfileJob:
    """What a worker needs to profile one graded submission."""

    run_key: str
    submission_id: int
    folder: Path
    source: str
    device_kind: str

    @property
    def engine_device(self) -> str:
        return worker_kind_device(self.device_kind)


def others_waiting(*, kind: str) -> bool:
    """Whether a submission of this worker kind is queued (not yet claimed)."""
    return Submission.objects.filter(status=Status.QUEUED, device_kind=kind).exists()


def _takeable(now: datetime) -> Q:
    return Q(profile_pending=True) & (
        Q(profile_claimed_at__isnull=True) | Q(profile_claimed_at__lt=now - CLAIM_EXPIRES)
    )


def waiting_exists(*, kind: str) -> bool:
    """Whether a profile of this kind is left for a worker to take."""
    return Grading.objects.filter(_takeable(timezone.now()), submission__device_kind=kind).exists()


def take_waiting(*, kind: str) -> ProfileJob | None:
    """Claim the oldest grading of this kind whose profile was left for later; None when
    there is none. Of two workers claiming one, the conditional UPDATE lets one win."""
    now = timezone.now()
    waiting = (
        Grading.objects.filter(_takeable(now), submission__device_kind=kind)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for pk in list(waiting[:5]):
        if Grading.objects.filter(_takeable(now), pk=pk).update(profile_claimed_at=now) != 1:
            continue
        grading = Grading.objects.select_related("submission__item").get(pk=pk)
        submission = grading.submission
        return ProfileJob(
            run_key=grading.run_key,
            submission_id=submission.pk,
            folder=Path(settings.GRADERS_EXERCISES_ROOT) / submission.item.source_path,
            source=submission.source,
            device_kind=submission.device_kind,
        )
    return None


def send(*, kind: str) -> None:
    """Queue the task that takes this kind's waiting profiles, behind what is queued there."""
    try:
        current_app.send_task(PROFILE_TASK_NAME, args=[kind], queue=kind)
    except Exception:  # the sweep sends it again later
        logger.exception("Could not queue the waiting profiles of kind %s", kind)


def send_for_forgotten(*, now: datetime | None = None) -> int:
    """For each kind with a profile left waiting longer than a claim lasts (its task was lost
    with a worker or the broker), send the task again. The beat's sweep calls this; returns
    how many kinds it sent for."""
    now = now or timezone.now()
    kinds = set(
        Grading.objects.filter(_takeable(now), created_at__lt=now - CLAIM_EXPIRES).values_list(
            "submission__device_kind", flat=True
        )
    )
    for kind in sorted(kinds):
        send(kind=kind)
    return len(kinds)
