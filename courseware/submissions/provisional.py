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

The regrades are the student's load on the workers, so they are bounded per student too
(issue 38, class 4): each one counts against the student's grading time for the day
(``GRADING_SECONDS_PER_DAY``, courseware/submissions/selectors.py), none is started once that
is spent, and only one submission of a student is regraded at a time: the oldest of those whose
provisional points are still waiting. The others wait their turn and are scheduled when the
one before them settles, so a student cannot multiply their load by sending many files that
go provisional.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from django.db import transaction

from courseware.submissions.models import Grading, Status, Submission
from courseware.submissions.selectors import grading_budget_for

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


# A submission whose newest grading is provisional waits for a regrade in these statuses (being
# graded again, or finished and due for it).
_WAITING_STATUSES = (Status.QUEUED, Status.RUNNING, Status.GRADED, Status.NEEDS_REVIEW)


def waiting_for_regrade(user_id: int) -> list[int]:
    """The student's submissions whose provisional points still wait for a regrade, oldest
    first: the newest grading is provisional and tries remain."""
    candidates = (
        Submission.objects.filter(
            user_id=user_id, status__in=_WAITING_STATUSES, gradings__provisional=True
        )
        .distinct()
        .order_by("pk")
    )
    waiting = []
    for submission in candidates:
        newest = submission.current_grading
        tries_left = newest is not None and provisional_tries(submission.pk) <= TRIES
        if newest is not None and newest.provisional and tries_left:
            waiting.append(submission.pk)
    return waiting


def _turn_of(submission_id: int, user_id: int) -> bool:
    """Whether this submission is the one of its student to be regraded now (the oldest
    waiting): a student's provisional submissions are regraded one at a time."""
    waiting = waiting_for_regrade(user_id)
    return not waiting or waiting[0] == submission_id


def follow_up(grading: Grading) -> None:
    """Called as a grading is stored (inside its transaction): a provisional one schedules
    the next try once the transaction commits, while tries remain and it is the student's
    turn; one that ends a submission's tries hands the turn to the student's next."""
    submission = grading.submission
    tries = provisional_tries(grading.submission_id)
    if not grading.provisional or tries > TRIES:
        if tries > TRIES:
            logger.info("Submission %s stays provisional after %s tries", submission.pk, tries)
        if tries:
            _hand_on(submission.pk, submission.user_id)
        return
    if not _turn_of(submission.pk, submission.user_id):
        logger.info(
            "Submission %s waits: another provisional submission of its student is regraded first",
            submission.pk,
        )
        return
    submission_id, queue = submission.pk, submission.device_kind
    countdown = retry_after_s()[min(tries, TRIES) - 1]
    transaction.on_commit(lambda: schedule(submission_id, queue=queue, countdown=countdown))


def _hand_on(settled_id: int, user_id: int) -> None:
    """Schedule the student's next waiting provisional submission, if any, once the one that
    had the turn (``settled_id``, the oldest) settled. One younger than a submission still
    waiting never had the turn: the older one keeps it, its regrade already scheduled."""
    waiting = waiting_for_regrade(user_id)
    if not waiting or waiting[0] < settled_id:
        return
    nxt = Submission.objects.get(pk=waiting[0])
    if nxt.status not in (Status.GRADED, Status.NEEDS_REVIEW):
        return  # already being graded again
    countdown = retry_after_s()[min(provisional_tries(nxt.pk), TRIES) - 1]
    submission_id, queue = nxt.pk, nxt.device_kind
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
    """The task's work: "settled" (nothing to do), "waits" (another submission of the student
    is regraded first: this one is scheduled when that one settles), "over_budget" (the
    student's grading time for the day is spent: the mark stays, a TA decides),
    "stepped_back" (others wait: tried again later) or "queued" (graded again now)."""
    submission = Submission.objects.filter(pk=submission_id).first()
    if submission is None:
        return "settled"
    grading = submission.current_grading
    finished = (Status.GRADED, Status.NEEDS_REVIEW)
    if grading is None or not grading.provisional or submission.status not in finished:
        return "settled"  # regraded meanwhile, overridden into review, or gone
    if not _turn_of(submission.pk, submission.user_id):
        return "waits"
    budget = grading_budget_for(user=submission.user)
    if budget is not None and budget.spent:
        logger.info("Provisional submission %s stays: its student's budget is spent", submission_id)
        return "over_budget"
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
