"""The grading task: a wake-up comes in, the engine grades, one service writes the result.

The task only translates between Celery and the services. The message's id only says which
worker kind to wake: `courseware.fleet.dispatch.take_next` claims the fairest queued submission
of that kind (or None when nothing is queued: another delivery already took it),
`graders.grade` is the one engine call, and `grading_record` (only while this worker's claim
still holds) or `submission_grader_broke` writes the outcome. The registered names stay
`graders.*` so messages already waiting in a queue from before the task moved here still find it.
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
from courseware.fleet import dispatch, recovery
from courseware.submissions import db_retry, services
from graders import Report

logger = logging.getLogger(__name__)


# max_retries=None: a retry is only a delayed wake-up; how often the grader may break on one
# submission is counted on the submission (services.GRADER_TRIES).
@shared_task(bind=True, name="graders.grade_submission", max_retries=None, ignore_result=True)
def grade_submission(self: Task[[int], None], submission_id: int) -> None:
    # Every service call below waits out a database outage (db_retry) rather than raising: the
    # message stays unacknowledged and a finished report is kept until it can be recorded.
    wait = db_retry.until_database_answers
    node = self.request.hostname
    job = wait(
        f"claiming the next submission (woken for {submission_id})",
        dispatch.take_next,
        hint=submission_id,
        node_name=node,
    )
    if job is None:
        logger.info("Nothing queued for the kind of submission %s (taken or gone)", submission_id)
        return
    started = time.monotonic()
    recorded: list[Report] = []

    def record(report: Report) -> None:
        """The grade is final: the student sees it now, before the informative profile."""
        wait(
            f"recording the grading of submission {job.submission_id}",
            services.grading_record,
            submission_id=job.submission_id,
            report=report,
            run_key=job.claim_token,
            worker=f"{socket.gethostname()}:{node or ''}",
            duration_s=time.monotonic() - started,
            claim_token=job.claim_token,
        )
        recorded.append(report)

    try:
        report = graders.grade(
            job.folder,
            job.source,
            device=job.engine_device,
            slot=settings.GRADERS_SLOT,
            on_graded=record,
        )
    # grade() never raises for what the student did, so anything raised here (GraderError,
    # SpecError, a soft time limit, a bug) is the grader breaking: retry, then fail without
    # cost to them.
    except Exception as exc:
        if recorded:  # it broke taking the profile, after the grade was stored: keep that
            logger.exception("Profiling submission %s failed", job.submission_id)
            wait("freeing this worker", dispatch.done, job=job, node_name=node)
            return
        logger.exception("Grading submission %s failed", job.submission_id)
        again = wait(
            f"recording that the grader broke on submission {job.submission_id}",
            services.submission_grader_broke,
            job=job,
            reason=traceback.format_exc(),
            give_up=isinstance(exc, SoftTimeLimitExceeded),
        )
        wait("freeing this worker", dispatch.done, job=job, node_name=node)
        if again:
            raise self.retry(exc=exc, countdown=5 * min(self.request.retries + 1, 6)) from exc
        return
    if not recorded:  # graded without a profile to follow (a notebook, an early verdict)
        record(report)
    elif report.get("profile"):
        wait(
            f"adding the profile of submission {job.submission_id}",
            services.grading_attach_profile,
            run_key=job.claim_token,
            profile=list(report.get("profile") or []),
        )
    wait("freeing this worker", dispatch.done, job=job, node_name=node)


@shared_task(name="graders.requeue_stale", ignore_result=True)
def requeue_stale() -> int:
    return recovery.sweep()


@worker_ready.connect
def sweep_on_start(**_kwargs: object) -> None:
    """A worker coming up picks up what a lost worker or a broker outage left behind."""
    try:
        recovery.sweep()
    except Exception:  # never keep a worker from starting
        logger.exception("The stale-submission sweep failed")
    finally:
        connection.close()  # the worker's main process holds no database connection
