"""What the grading task asks of the fleet: take the next submission, and say when done.

A broker message is only a wake-up call for a worker kind; it carries a submission id (the
task's signature since before the fleet), which now only names the kind. The worker claims
the fairest queued submission of that kind (services.submission_claim_next), so a student's
second submission waits behind the others' first whatever order the messages came in.
"""

from __future__ import annotations

import logging
import os

from django.conf import settings

from courseware.fleet import recovery, registry
from courseware.fleet.identity import WorkerIdentity, this_worker
from courseware.submissions import services
from courseware.submissions.models import Submission

logger = logging.getLogger(__name__)


def holder_for(identity: WorkerIdentity) -> services.Holder:
    return services.Holder(name=identity.name, pid=os.getpid())


def kind_for(hint: int | None) -> str:
    """The worker kind a wake-up is for: that of the submission it names (its queue), or this
    worker's own when the submission is gone."""
    if hint is not None:
        kind = Submission.objects.filter(pk=hint).values_list("device_kind", flat=True).first()
        if kind:
            return kind
    return str(settings.GRADERS_WORKER_KIND)


def take_next(*, hint: int | None, node_name: str | None) -> services.GradingJob | None:
    """Claim the fairest queued submission of the wake-up's kind for this worker process.

    First, work this worker's own processes claimed and no longer run is put back: after a
    pool child is killed mid-grading, Celery hands its message to the worker again, and
    that submission must not wait for a sweep."""
    identity = this_worker(node_name)
    recovery.reclaim_from_dead_processes(identity)
    job = services.submission_claim_next(kind=kind_for(hint), holder=holder_for(identity))
    if job is not None:
        registry.worker_grading(name=identity.name, submission_id=job.submission_id)
    return job


def done(*, job: services.GradingJob, node_name: str | None) -> None:
    """This worker is free again."""
    registry.worker_idle(name=this_worker(node_name).name, submission_id=job.submission_id)
