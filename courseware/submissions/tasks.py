"""The grading task: an id comes in, the engine grades, one service writes the result.

The task only translates between Celery and the services: `submission_claim` turns the id
into a job (or None when another delivery already took it), `graders.grade` is the one engine
call, and `grading_record` or, after the last retry, `submission_mark_failed` writes the
outcome. The registered names stay `graders.*` so messages already waiting in a queue from
before the task moved here still find it.
"""

from __future__ import annotations

import logging
import socket
import time
import traceback

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready
from django.conf import settings
from django.db import connection

import graders
from courseware.submissions import services

logger = logging.getLogger(__name__)

MAX_RETRIES = 2


@shared_task(
    bind=True, name="graders.grade_submission", max_retries=MAX_RETRIES, ignore_result=True
)
def grade_submission(self: Task[[int], None], submission_id: int) -> None:
    run_key = str(self.request.id or f"local-{submission_id}-{time.time_ns()}")
    job = services.submission_claim(submission_id=submission_id)
    if job is None:
        logger.info("Submission %s is not queued (already taken or gone); skipping", submission_id)
        return
    started = time.monotonic()
    try:
        report = graders.grade(
            job.folder, job.source, device=job.device_kind, slot=settings.GRADERS_SLOT
        )
    # grade() never raises for what the student did, so anything raised here (GraderError,
    # SpecError, a soft time limit, a bug) is the grader breaking: retry, then fail without
    # cost to them.
    except Exception as exc:
        logger.exception("Grading submission %s failed", submission_id)
        if self.request.retries < MAX_RETRIES and not isinstance(exc, SoftTimeLimitExceeded):
            services.submission_release_claim(submission_id=submission_id)
            raise self.retry(exc=exc, countdown=5 * (self.request.retries + 1)) from exc
        services.submission_mark_failed(
            submission_id=submission_id, run_key=run_key, reason=traceback.format_exc()
        )
        return
    services.grading_record(
        submission_id=submission_id,
        report=report,
        run_key=run_key,
        worker=f"{socket.gethostname()}:{self.request.hostname or ''}",
        duration_s=time.monotonic() - started,
    )


@shared_task(name="graders.requeue_stale", ignore_result=True)
def requeue_stale() -> int:
    return services.submission_requeue_stale()


@worker_ready.connect
def sweep_on_start(**_kwargs: object) -> None:
    """A worker coming up picks up what a lost worker or a broker outage left behind."""
    try:
        services.submission_requeue_stale()
    except Exception:  # never keep a worker from starting
        logger.exception("The stale-submission sweep failed")
    finally:
        connection.close()  # the worker's main process holds no database connection
