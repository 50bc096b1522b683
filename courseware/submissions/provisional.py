"""Provisional performance points: graded again once the worker is quiet.

A grading whose timed phase was disturbed twice (graders/measure/load.py) keeps its points,
marked provisional: the report page, the student's dashboard and the gradebook say so, and the
LMS is told the score is not final (AGS ``gradingProgress = Pending``). The submission is then
graded again by itself, later, when no other submission of its worker kind waits. The new
grading replaces the old one as every regrade does; its score reaches the LMS through the
passback every new grading queues (courseware/lti/signals.py).

Patience is bounded: at most ``TRIES`` provisional gradings of one submission are followed by
another. After that the mark stays where staff and student see it; a TA may regrade or
override it.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from django.db import transaction

from courseware.submissions.models import Grading, Status, Submission

logger = logging.getLogger(__name__)

REGRADE_TASK_NAME = "graders.regrade_provisional"
# The wait before the next try, in units of settings.GRADING_PROVISIONAL_RETRY_S (60 s: then
# 1, 5, 15 and 30 minutes), by the number of provisional gradings so far: a busy hour passes,
# a deadline rush is waited out rather than added to.
BACKOFF = (1, 5, 15, 30)
TRIES = len(BACKOFF)
# While other submissions of the kind wait, a provisional one steps back this long.
STEP_BACK_S = 60


def retry_after_s() -> tuple[float, ...]:
    return tuple(settings.GRADING_PROVISIONAL_RETRY_S * step for step in BACKOFF)


def provisional_tries(submission_id: int) -> int:
    return Grading.objects.filter(submission_id=submission_id, provisional=True).count()


def follow_up(grading: Grading) -> None:
    """Called as a grading is stored (inside its transaction): a provisional one schedules
    the next try once the transaction commits, while tries remain."""
    if not grading.provisional:
        return
    tries = provisional_tries(grading.submission_id)
    if tries > TRIES:
        logger.info("Submission %s stays provisional after %s tries", grading.submission_id, tries)
        return
    submission_id, queue = grading.submission_id, grading.submission.device_kind
    countdown = retry_after_s()[min(tries, TRIES) - 1]
    transaction.on_commit(lambda: schedule(submission_id, queue=queue, countdown=countdown))


def schedule(submission_id: int, *, queue: str, countdown: float) -> None:
    """Send the regrade task; a broker outage only loses a try (the mark stays, a TA sees it)."""
    try:
        current_app.send_task(
            REGRADE_TASK_NAME, args=[submission_id], queue=queue, countdown=countdown
        )
    except Exception:
        logger.exception(
            "Could not schedule the regrade of provisional submission %s", submission_id
        )


def regrade_if_still_provisional(submission_id: int) -> str:
    """The task's work: "settled" (nothing to do), "stepped_back" (others wait: tried again
    later) or "queued" (graded again now)."""
    submission = Submission.objects.filter(pk=submission_id).first()
    if submission is None:
        return "settled"
    grading = submission.current_grading
    finished = (Status.GRADED, Status.NEEDS_REVIEW)
    if grading is None or not grading.provisional or submission.status not in finished:
        return "settled"  # regraded meanwhile, overridden into review, or gone
    kind = submission.device_kind
    if Submission.objects.filter(status=Status.QUEUED, device_kind=kind).exists():
        schedule(submission_id, queue=kind, countdown=STEP_BACK_S)
        return "stepped_back"
    # Imported here: services imports this module to follow up on what it stores.
    from courseware.submissions.services import submission_requeue_finished

    if not submission_requeue_finished(submission=submission, finished=finished):
        return "settled"
    logger.info("Provisional submission %s is graded again", submission_id)
    return "queued"
