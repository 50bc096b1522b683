"""The grading task: a wake-up comes in, the engine grades, one service writes the result.

The task only translates between Celery and the services. The message's id only says which
worker kind to wake: `courseware.fleet.dispatch.take_next` claims the fairest queued submission
of that kind (or None when nothing is queued: another delivery already took it),
`graders.grade` is the one engine call, and `grading_record` (only while this worker's claim
still holds) or `submission_grader_broke` writes the outcome. When other submissions wait as
a grade becomes final, the profile is left for `take_waiting_profiles`, which takes it once the
queue is empty (courseware/submissions/profiles_later.py). The registered names stay
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
from courseware.submissions import db_retry, profiles_later, provisional, services
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
    left_for_later: list[bool] = []

    def record(report: Report, *, profile_later: bool = False) -> None:
        wait(
            f"recording the grading of submission {job.submission_id}",
            services.grading_record,
            submission_id=job.submission_id,
            report=report,
            run_key=job.claim_token,
            worker=f"{socket.gethostname()}:{node or ''}",
            duration_s=time.monotonic() - started,
            claim_token=job.claim_token,
            profile_pending=profile_later,
        )
        recorded.append(report)

    def graded(report: Report) -> bool:
        """The grade is final: the student sees it now, before the informative profile,
        which waits until the queue is empty when other submissions are waiting (False)."""
        later = wait(
            "looking for submissions waiting",
            profiles_later.others_waiting,
            kind=job.device_kind,
        )
        record(report, profile_later=later)
        left_for_later.append(later)
        return not later

    try:
        report = graders.grade(
            job.folder,
            job.source,
            device=job.engine_device,
            slot=settings.GRADERS_SLOT,
            on_graded=graded,
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
    elif any(left_for_later):
        # Behind the wake-ups queued now: the profile is taken once they are graded.
        profiles_later.send(kind=job.device_kind)
    elif report.get("profile"):
        wait(
            f"adding the profile of submission {job.submission_id}",
            services.grading_attach_profile,
            run_key=job.claim_token,
            profile=list(report.get("profile") or []),
        )
    wait("freeing this worker", dispatch.done, job=job, node_name=node)


@shared_task(name=profiles_later.PROFILE_TASK_NAME, ignore_result=True)
def take_waiting_profiles(kind: str) -> int:
    """Take the profiles left for later on this worker kind, oldest first, while none of its
    submissions waits. When one comes (or this task has taken its share), send the task
    again, behind it. Returns how many it took."""
    wait = db_retry.until_database_answers
    taken = 0
    for _ in range(profiles_later.PER_TASK):
        if wait("looking for submissions waiting", profiles_later.others_waiting, kind=kind):
            break
        job = wait("claiming a profile left for later", profiles_later.take_waiting, kind=kind)
        if job is None:
            return taken
        try:
            rows = graders.profile(
                job.folder, job.source, device=job.engine_device, slot=settings.GRADERS_SLOT
            )
        except Exception:  # informative only: the report shows none
            logger.exception("Profiling submission %s failed", job.submission_id)
            rows = None
        wait(
            f"adding the profile of submission {job.submission_id}",
            services.grading_attach_profile,
            run_key=job.run_key,
            profile=list(rows or []),
        )
        taken += 1
    if wait("looking for profiles left", profiles_later.waiting_exists, kind=kind):
        profiles_later.send(kind=kind)
    return taken


@shared_task(name=provisional.REGRADE_TASK_NAME, ignore_result=True)
def regrade_provisional(submission_id: int) -> str:
    """Grade a submission again whose points are provisional, unless others wait."""
    return db_retry.until_database_answers(
        f"regrading provisional submission {submission_id}",
        provisional.regrade_if_still_provisional,
        submission_id,
    )


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
