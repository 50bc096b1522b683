"""Writes for submissions. Every status change goes through here.

Transitions: queued → running (a worker claims it) → graded | needs_review | failed;
running → queued (put back after a worker was lost, keeping its place), or → needs_review once
workers were lost on it twice; graded/needs_review/failed → queued (regrade).
Claims are conditional UPDATEs, so two workers never grade the same submission at once; each
claim has a token, and only the result of the claim still current is recorded.
"""

from __future__ import annotations

import hashlib
import logging
import math
import uuid
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from courseware.accounts.timezone import local_datetime_text
from courseware.courses.models import Item, ItemKind, Offering, Role
from courseware.courses.selectors import enrolment_for_item, item_get_published, policy_for
from courseware.refusals import Refused
from courseware.submissions import provisional
from courseware.submissions.models import (
    PENDING_STATUSES,
    Grading,
    ManualGrade,
    Override,
    RegradeBatch,
    RegradeScope,
    ReviewReason,
    SavedComment,
    Status,
    Submission,
    SubmissionKind,
)
from courseware.submissions.selectors import (
    attempts_used,
    fair_queue,
    grading_budget_for,
    grading_device_for,
    regrade_candidates,
    source_limit_bytes,
    worker_kinds_for,
)
from graders.report.build import grader_failure
from graders.report.types import Report
from graders.spec.exercise import WORKER_KIND_PATTERN, worker_kind_allowed, worker_kind_device

logger = logging.getLogger(__name__)

# The grading task's registered name. Services send it by name, so this module and
# courseware.submissions.tasks (which registers it) do not import each other.
GRADE_TASK_NAME = "graders.grade_submission"
# Tries the grader gets on one submission (the first and two more) before it is marked failed.
GRADER_TRIES = 3
# A worker claiming the next submission tries this many of the fairest, in order, before it
# reads the queue again (the others may have been claimed by other workers meanwhile).
CLAIM_CANDIDATES = 10
CLAIM_ROUNDS = 3


@dataclass(frozen=True)
class Holder:
    """The worker process that claims a submission: its Celery node name and process id."""

    name: str
    pid: int


@dataclass(frozen=True)
class GradingJob:
    """What a worker needs to grade one claimed submission."""

    submission_id: int
    folder: Path
    source: str
    device_kind: str  # the worker kind ("cpu", "cuda-h100")
    claim_token: str = ""  # this claim's; the result is recorded only while it still holds

    @property
    def engine_device(self) -> str:
        """The device graders.grade is called with ("cpu" or "cuda")."""
        return worker_kind_device(self.device_kind)


@dataclass(frozen=True)
class Lateness:
    is_late: bool
    days: int


def _lateness_or_refuse(*, item: Item, policy_due: Any, late_until: Any, opens_at: Any) -> Lateness:
    now = timezone.now()
    if opens_at is not None and now < opens_at:
        raise Refused(
            _("%(item)s opens on %(when)s; submit after that.")
            % {"item": item.slug, "when": local_datetime_text(opens_at)},
            status_code=403,
        )
    if policy_due is None or now <= policy_due:
        return Lateness(False, 0)
    if late_until is None or now > late_until:
        raise Refused(
            _(
                "The deadline for %(item)s passed on %(when)s and late work is no longer accepted. "
                "Ask your instructor if you need an extension."
            )
            % {"item": item.slug, "when": local_datetime_text(policy_due)},
            status_code=403,
        )
    days = math.ceil((now - policy_due) / timedelta(days=1))
    return Lateness(True, days)


def _pending_limit(offering_limit: int | None) -> int:
    if offering_limit is not None:
        return offering_limit
    return int(settings.SUBMISSIONS_MAX_PENDING_PER_STUDENT)


def _notebook_problem(notebook: str) -> str | None:
    """Why this text is not a notebook we can grade, or None when it is one."""
    import nbformat

    try:
        parsed = nbformat.reads(notebook, as_version=4)
        nbformat.validate(parsed)
    except Exception as exc:  # nbformat raises several kinds for malformed files
        first_line = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return _(
            "This is not a valid Jupyter notebook (%(why)s). Upload the .ipynb file you "
            "downloaded from the exercise page, saved from Jupyter."
        ) % {"why": first_line or type(exc).__name__}
    return None


def _content_for(
    *, item: Item, code: str | None, notebook: str | None
) -> tuple[SubmissionKind, str]:
    """The kind and the text to save for this item, or Refused saying what to send instead."""
    if item.kind == ItemKind.NOTEBOOK:
        if not isinstance(notebook, str) or not notebook.strip():
            raise Refused(
                _("%(item)s is a notebook exercise: upload your .ipynb file.") % {"item": item.slug}
            )
        problem = _notebook_problem(notebook)
        if problem:
            raise Refused(problem)
        return SubmissionKind.NOTEBOOK, notebook
    if not isinstance(code, str) or not code.strip():
        raise Refused(_("The code is empty. Paste your solution and submit again."))
    _refuse_oversized(item=item, code=code)
    return SubmissionKind.CODE, code


def _refuse_oversized(*, item: Item, code: str) -> None:
    """Refuse now what the grader would reject as too large later (its precheck applies the
    same `source_bytes` limit), so it is never queued and costs no attempt."""
    limit = source_limit_bytes(item)
    size = len(code.encode("utf-8", "surrogatepass"))
    if limit is not None and size > limit:
        raise Refused(
            _(
                "Your code is %(size)d bytes; the limit for %(item)s is %(limit)d bytes "
                "(%(kib)s KiB). Remove unused code and submit again; this did not count as an "
                "attempt."
            )
            % {"size": size, "item": item.slug, "limit": limit, "kib": f"{limit / 1024:g}"},
            status_code=413,
        )


def _device_for(*, item: Item, device_kind: str | None) -> str:
    """The worker kind that will grade it: the one asked for, if the item takes it, or the one
    selectors.grading_device_for chooses."""
    allowed = worker_kinds_for(item)
    device = device_kind or grading_device_for(item) or settings.GRADING_DEVICE_KIND
    if not WORKER_KIND_PATTERN.fullmatch(str(device)) or not worker_kind_allowed(device, allowed):
        raise Refused(
            _("%(item)s cannot be graded on '%(device)s'; it accepts %(kinds)s.")
            % {"item": item.slug, "device": device, "kinds": ", ".join(allowed)}
        )
    return str(device)


def _refuse_over_budget(user: User) -> None:
    """Refuse a new submission once the student's grading time for today is spent. Nothing is
    saved, so nothing is lost: the same code can be sent again after the reset."""
    budget = grading_budget_for(user=user)
    if budget is None or not budget.spent:
        return
    raise Refused(
        _(
            "You have used today's grading time (%(used)s of %(limit)s minutes). It resets on "
            "%(when)s; submit again then. Your earlier submissions and their grades are kept, "
            "and this one was not saved or counted as an attempt."
        )
        % {
            "used": f"{budget.used_s / 60:.0f}",
            "limit": f"{budget.limit_s / 60:g}",
            "when": local_datetime_text(budget.resets_at),
        },
        status_code=429,
    )


def _is_course_staff(user: User, role: str | None) -> bool:
    """A TA's or instructor's own submissions (trying an exercise out) have no budget."""
    return bool(getattr(user, "is_superuser", False)) or role in (Role.TA, Role.INSTRUCTOR)


def submission_create(
    *,
    user: User,
    exercise_slug: str,
    code: str | None = None,
    notebook: str | None = None,
    device_kind: str | None = None,
) -> Submission:
    """Save a code or notebook submission and queue it for grading once the row is committed."""
    if not isinstance(exercise_slug, str) or not exercise_slug.strip():
        raise Refused(_("Name the exercise: send its slug in the field 'exercise'."))
    item = item_get_published(slug=exercise_slug.strip())
    if item is None or item.kind not in (ItemKind.EXERCISE, ItemKind.NOTEBOOK):
        raise Refused(
            _("There is no exercise named '%(slug)s'. Check the slug on the exercise page.")
            % {"slug": exercise_slug}
        )
    kind, source = _content_for(item=item, code=code, notebook=notebook)
    device = _device_for(item=item, device_kind=device_kind)

    enrolment = enrolment_for_item(user=user, item=item)
    if enrolment is None and not getattr(user, "is_superuser", False):
        raise Refused(
            _(
                "You are not enrolled in a running offering of this course. "
                "Ask your instructor to enrol you."
            ),
            status_code=403,
        )
    offering = enrolment.offering if enrolment else None

    with transaction.atomic():
        # Lock the user's row so that two concurrent submissions cannot both pass the limits.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        lateness = Lateness(False, 0)
        if offering is not None:
            # The student's own extension counts: lateness runs from their due date.
            policy = policy_for(offering=offering, item=item, user=user)
            lateness = _lateness_or_refuse(
                item=item,
                policy_due=policy.due_at,
                late_until=policy.late_until,
                opens_at=policy.opens_at,
            )
            used = attempts_used(user=user, item=item, offering_id=offering.pk)
            if policy.max_attempts is not None and used >= policy.max_attempts:
                raise Refused(
                    _("You have used all %(n)d attempts for %(item)s.")
                    % {"n": policy.max_attempts, "item": item.slug},
                    status_code=403,
                )
        limit = _pending_limit(offering.max_pending_per_student if offering else None)
        pending = Submission.objects.filter(user=user, status__in=PENDING_STATUSES).count()
        if pending >= limit:
            raise Refused(
                _(
                    "You already have %(n)d submissions waiting to be graded. "
                    "Wait for one to finish, then submit again."
                )
                % {"n": pending},
                status_code=429,
            )
        if not _is_course_staff(user, enrolment.role if enrolment else None):
            _refuse_over_budget(user)
        submission = Submission.objects.create(
            user=user,
            item=item,
            offering=offering,
            kind=kind,
            source=source,
            source_sha256=hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
            content_hash=item.content_hash,
            device_kind=device,
            is_late=lateness.is_late,
            late_days=lateness.days,
        )
        submission_id, queue = submission.pk, submission.device_kind
        transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id, queue=queue))
    return submission


def submission_enqueue(*, submission_id: int, queue: str) -> None:
    """Send the grading task; only the id travels. A broker outage leaves it queued for later."""
    try:
        current_app.send_task(GRADE_TASK_NAME, args=[submission_id], queue=queue)
    except Exception:  # the row is saved; the stale sweep will send it again
        logger.exception("Could not queue submission %s; it stays queued", submission_id)


def _claim(submission_id: int, holder: Holder | None) -> GradingJob | None:
    """Move one queued submission to running under a new claim token. The UPDATE is
    conditional on the row still being queued, which is atomic on PostgreSQL (row lock, the
    condition checked again) and on SQLite (one writer at a time): of two claimers, one wins."""
    token = uuid.uuid4().hex
    now = timezone.now()
    taken = Submission.objects.filter(pk=submission_id, status=Status.QUEUED).update(
        status=Status.RUNNING,
        status_changed_at=now,
        claim_token=token,
        claimed_by=holder.name[:200] if holder else "",
        claimed_pid=holder.pid if holder else None,
        claimed_at=now,
    )
    if taken != 1:
        return None
    submission = Submission.objects.select_related("item").get(pk=submission_id)
    return GradingJob(
        submission_id=submission.pk,
        folder=Path(settings.GRADERS_EXERCISES_ROOT) / submission.item.source_path,
        source=submission.source,
        device_kind=submission.device_kind,
        claim_token=token,
    )


def submission_claim(*, submission_id: int, holder: Holder | None = None) -> GradingJob | None:
    """Move this queued submission to running. None if it is not queued (another claim took
    it). Workers take the fairest instead, with submission_claim_next."""
    return _claim(submission_id, holder)


def submission_claim_next(*, kind: str, holder: Holder) -> GradingJob | None:
    """Claim the fairest queued submission of this worker kind (selectors.fair_queue), or None
    when none is queued. A candidate another worker took first is skipped for the next."""
    for _round in range(CLAIM_ROUNDS):
        order = fair_queue(kind=kind).order
        if not order:
            return None
        for candidate in order[:CLAIM_CANDIDATES]:
            job = _claim(candidate, holder)
            if job is not None:
                return job
    return None


def _set_status(*, submission_id: int, new: Status, allowed_from: tuple[Status, ...]) -> bool:
    return (
        Submission.objects.filter(pk=submission_id, status__in=allowed_from).update(
            status=new, status_changed_at=timezone.now()
        )
        == 1
    )


def _decimal(value: Any) -> Decimal | None:
    if value is None:
        return None
    return Decimal(str(round(float(value), 3)))


def grading_record(
    *,
    submission_id: int,
    report: Report,
    run_key: str,
    worker: str,
    duration_s: float,
    claim_token: str | None = None,
    profile_pending: bool = False,
) -> Grading | None:
    """Store the engine's report as a new grading and finish the submission.

    `profile_pending`: the worker left the profile for later (courseware/submissions/
    profiles_later.py), so the report gains it once the queue is empty.

    With `claim_token`, only while that claim still holds the submission: a worker that lost
    its claim (it went silent and the work was given to another) finishing late writes nothing.
    None when nothing was written (that, or the same run recorded twice)."""
    submission = Submission.objects.get(pk=submission_id)
    needs_person = bool(report["flags"]) or _hand_grades_missing(submission, report)
    new_status = Status.NEEDS_REVIEW if needs_person else Status.GRADED
    # The version of the exercise files that graded it (they may have changed since submitting).
    content_hash = report["exercise_hash"] or submission.content_hash
    try:
        with transaction.atomic():
            if claim_token is not None and not _finish_claim(
                submission_id=submission.pk, claim_token=claim_token, new=new_status
            ):
                logger.warning(
                    "Submission %s: the result of claim %s is discarded; that claim was lost",
                    submission.pk,
                    claim_token,
                )
                return None
            grading = Grading.objects.create(
                submission=submission,
                run_key=run_key,
                verdict=report["verdict"],
                gradable=report["gradable"],
                score=_decimal(report["score"]),
                max_score=_decimal(report["max_score"]),
                report=report,
                content_hash=content_hash,
                worker=worker[:200],
                duration_s=duration_s,
                profile_pending=profile_pending,
                provisional=bool(report.get("load", {}).get("provisional")),
            )
            provisional.follow_up(grading)
            if claim_token is None:
                _set_status(
                    submission_id=submission.pk, new=new_status, allowed_from=(Status.RUNNING,)
                )
    except IntegrityError:
        logger.info("Submission %s: delivery %s already recorded", submission.pk, run_key)
        return None
    return grading


def _finish_claim(*, submission_id: int, claim_token: str, new: Status) -> bool:
    return (
        Submission.objects.filter(
            pk=submission_id, status=Status.RUNNING, claim_token=claim_token
        ).update(status=new, status_changed_at=timezone.now())
        == 1
    )


def grading_attach_profile(*, run_key: str, profile: list[Any]) -> bool:
    """Add the informative profile to a grading already recorded (the engine takes it after
    the grade is final, so the student does not wait for it). Score and status stay as they
    are; False when no grading has that run key (its claim was lost, nothing was stored)."""
    with transaction.atomic():
        grading = Grading.objects.select_for_update().filter(run_key=run_key).first()
        if grading is None:
            return False
        grading.report = {**grading.report, "profile": profile}
        grading.profile_pending = False
        grading.save(update_fields=["report", "profile_pending"])
    return True


def _hand_grades_missing(submission: Submission, report: Report) -> bool:
    """Whether a hand-graded cell of this report has no person's score yet. A regrade of a
    notebook that TAs already graded keeps their scores, so it does not wait for them again."""
    if not report.get("needs_manual_grade"):
        return False
    manual = {
        cell.get("grade_id") for cell in report.get("cells") or [] if cell.get("needs_manual_grade")
    }
    scored = set(
        ManualGrade.objects.filter(submission=submission).values_list("grade_id", flat=True)
    )
    return not manual or not manual <= scored


def submission_mark_failed(
    *, submission_id: int, run_key: str, reason: str, claim_token: str | None = None
) -> None:
    """The grader broke: say so, and don't count it against the student. With `claim_token`,
    only while that claim still holds it."""
    with transaction.atomic():
        if claim_token is not None:
            if not _finish_claim(
                submission_id=submission_id, claim_token=claim_token, new=Status.FAILED
            ):
                return
        elif not _set_status(
            submission_id=submission_id,
            new=Status.FAILED,
            allowed_from=(Status.RUNNING, Status.QUEUED),
        ):
            return
        submission = Submission.objects.select_related("item").get(pk=submission_id)
        report = grader_failure(
            exercise=submission.item.slug,
            max_score=float(submission.item.max_score),
            device=submission.device_kind,
            message=_(
                "The grader failed on our side; this costs you nothing. "
                "Submit again, and tell your TA if it keeps happening."
            ),
            internal_error=reason[-2000:],
        )
        Grading.objects.get_or_create(
            run_key=run_key,
            defaults={
                "submission": submission,
                "verdict": None,
                "gradable": False,
                "report": report,
                "content_hash": submission.content_hash,
            },
        )


def submission_release_claim(*, submission_id: int, claim_token: str | None = None) -> bool:
    """Put a running submission back on the queue (before a retry), keeping its place."""
    held = Submission.objects.filter(pk=submission_id, status=Status.RUNNING)
    if claim_token is not None:
        held = held.filter(claim_token=claim_token)
    return held.update(status=Status.QUEUED, status_changed_at=timezone.now(), claim_token="") == 1


def submission_grader_broke(*, job: GradingJob, reason: str, give_up: bool = False) -> bool:
    """The grader raised on a claimed submission (never the student's doing). Put it back for
    another try, or on its last try (or when `give_up`) mark it failed, at no cost to the
    student. True when it went back on the queue."""
    held = Submission.objects.filter(
        pk=job.submission_id, status=Status.RUNNING, claim_token=job.claim_token
    )
    if not held.update(grader_errors=F("grader_errors") + 1):
        return False  # the claim was lost meanwhile; whoever holds it now decides
    errors = held.values_list("grader_errors", flat=True).first() or 0
    if give_up or errors >= GRADER_TRIES:
        submission_mark_failed(
            submission_id=job.submission_id,
            run_key=job.claim_token,
            reason=reason,
            claim_token=job.claim_token,
        )
        return False
    return submission_release_claim(submission_id=job.submission_id, claim_token=job.claim_token)


def submission_reclaim(*, submission_id: int, claim_token: str, why: str) -> Status | None:
    """The worker holding this claim was lost mid-grading: put the submission back on the queue
    (it keeps its place) and wake a worker, or once workers were lost on it
    SUBMISSIONS_MAX_WORKERS_LOST times, hand it to a TA instead of a further worker (the
    submission itself may be what kills them). Conditional on the claim token: of several
    sweeps that notice the same loss, one acts, and a claim that moved on is left alone.
    Returns the new status, or None when nothing changed."""
    held = Submission.objects.filter(
        pk=submission_id, status=Status.RUNNING, claim_token=claim_token
    )
    lost = {
        "status_changed_at": timezone.now(),
        "claim_token": "",
        "workers_lost": F("workers_lost") + 1,
    }
    limit = int(settings.SUBMISSIONS_MAX_WORKERS_LOST)
    if held.filter(workers_lost__gte=limit - 1).update(
        status=Status.NEEDS_REVIEW, review_reason=ReviewReason.WORKERS_LOST, **lost
    ):
        logger.warning(
            "Submission %s lost its worker again (%s); a TA takes it", submission_id, why
        )
        return Status.NEEDS_REVIEW
    if not held.update(status=Status.QUEUED, **lost):
        return None
    logger.warning("Submission %s lost its worker (%s); queued again", submission_id, why)
    kind = Submission.objects.filter(pk=submission_id).values_list("device_kind", flat=True)[0]
    submission_enqueue(submission_id=submission_id, queue=kind)
    return Status.QUEUED


def submission_regrade(*, submission: Submission, requested_by: User) -> bool:
    """Queue a finished submission again; its earlier gradings stay as history. It joins the
    back of the queue, with fresh tries (a TA regrading one that lost its workers decides to
    try again)."""
    finished = (Status.GRADED, Status.NEEDS_REVIEW, Status.FAILED)
    if not submission_requeue_finished(submission=submission, finished=finished):
        return False
    logger.info("Submission %s regrade asked by %s", submission.pk, requested_by)
    return True


def submission_requeue_finished(*, submission: Submission, finished: tuple[Status, ...]) -> bool:
    """Move a submission in one of the ``finished`` statuses back to the queue, with fresh
    tries, and send it once that commits; False when it was not in one of them."""
    now = timezone.now()
    with transaction.atomic():
        regraded = Submission.objects.filter(pk=submission.pk, status__in=finished).update(
            status=Status.QUEUED,
            status_changed_at=now,
            queued_at=now,
            workers_lost=0,
            grader_errors=0,
            review_reason=ReviewReason.NONE,
        )
        if not regraded:
            return False
        submission_id, queue = submission.pk, submission.device_kind
        transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id, queue=queue))
    return True


def submission_requeue_stale(*, older_than_s: int | None = None) -> int:
    """Send again what a lost worker or broker left behind. Safe to run any time.

    A submission running this long is reclaimed whoever holds it (a grading's time limit is
    far shorter); one queued this long lost its wake-up call (a broker emptied or restarted),
    so it gets another. Work held by a worker whose heartbeat stopped is reclaimed sooner, by
    courseware.fleet.recovery. Returns how many were sent again."""
    age = older_than_s if older_than_s is not None else settings.SUBMISSIONS_STALE_AFTER_S
    cutoff = timezone.now() - timedelta(seconds=age)
    stuck = Submission.objects.filter(status=Status.RUNNING, status_changed_at__lt=cutoff)
    sent = 0
    for submission_id, token in stuck.values_list("pk", "claim_token"):
        why = f"running for over {age} s"
        if submission_reclaim(submission_id=submission_id, claim_token=token, why=why) == (
            Status.QUEUED
        ):
            sent += 1
    waiting = list(
        Submission.objects.filter(status=Status.QUEUED, status_changed_at__lt=cutoff).values_list(
            "pk", "device_kind"
        )
    )
    # Restart their clock, so a long backlog is not sent again at every sweep.
    Submission.objects.filter(pk__in=[pk for pk, _kind in waiting], status=Status.QUEUED).update(
        status_changed_at=timezone.now()
    )
    for submission_id, queue in waiting:
        submission_enqueue(submission_id=submission_id, queue=queue)
    return sent + len(waiting)


def manual_grade_record(
    *,
    submission: Submission,
    grade_id: str,
    score: Decimal,
    comment: str,
    author: User,
) -> ManualGrade:
    """Score one hand-graded cell; once every such cell has a score, the submission is graded."""
    grading = submission.current_grading
    cells = (grading.report.get("cells") or []) if grading is not None else []
    manual = {c.get("grade_id"): c for c in cells if c.get("needs_manual_grade")}
    if grade_id not in manual:
        raise Refused(_("Cell '%(cell)s' is not graded by hand.") % {"cell": grade_id})
    top = Decimal(str(manual[grade_id].get("max_score") or 0))
    if not score.is_finite() or not Decimal(0) <= score <= top:
        raise Refused(
            _("The score for '%(cell)s' must be between 0 and %(top)s.")
            % {"cell": grade_id, "top": top}
        )
    with transaction.atomic():
        grade = ManualGrade.objects.create(
            submission=submission, grade_id=grade_id, score=score, comment=comment, author=author
        )
        graded = set(
            ManualGrade.objects.filter(submission=submission).values_list("grade_id", flat=True)
        )
        if set(manual) <= graded:
            _set_status(
                submission_id=submission.pk,
                new=Status.GRADED,
                allowed_from=(Status.NEEDS_REVIEW,),
            )
    return grade


@dataclass(frozen=True)
class CellScore:
    """A person's score for one hand-graded cell, as typed in the grading form."""

    grade_id: str
    score: Decimal
    comment: str


def manual_grades_record(
    *, submission: Submission, scores: list[CellScore], author: User
) -> list[ManualGrade]:
    """Score several hand-graded cells at once: all of them are saved, or (when one is
    refused) none."""
    with transaction.atomic():
        return [
            manual_grade_record(
                submission=submission,
                grade_id=cell.grade_id,
                score=cell.score,
                comment=cell.comment,
                author=author,
            )
            for cell in scores
        ]


def saved_comment_keep(*, submission: Submission, grade_id: str, text: str, author: User) -> None:
    """Keep a comment for reuse on this exercise's cell; one already kept counts a use more."""
    text = text.strip()
    if not text:
        return
    kept, made = SavedComment.objects.get_or_create(
        item=submission.item, grade_id=grade_id, text=text, defaults={"author": author}
    )
    if not made:
        SavedComment.objects.filter(pk=kept.pk).update(times_used=kept.times_used + 1)


def exercise_regrade(
    *, item: Item, offering: Offering, scope: str, requested_by: User
) -> RegradeBatch:
    """Regrade an exercise's submissions in one offering (after its tests changed): the
    latest of each student, or every one. Each goes through submission_regrade; one still
    waiting for a worker is kept in the batch, since it will be graded with the new tests."""
    if scope not in RegradeScope.values:
        raise Refused(_("Choose which submissions to regrade: the latest of each student or all."))
    submissions = list(regrade_candidates(item=item, offering=offering, scope=scope))
    if not submissions:
        raise Refused(
            _("Nobody in %(offering)s has submitted %(item)s yet; there is nothing to regrade.")
            % {"offering": offering.slug, "item": item.slug}
        )
    with transaction.atomic():
        batch = RegradeBatch.objects.create(
            item=item, offering=offering, scope=scope, requested_by=requested_by
        )
        batch.submissions.set(submissions)
        for submission in submissions:
            submission_regrade(submission=submission, requested_by=requested_by)
    return batch


def override_record(
    *, submission: Submission, score: Decimal, comment: str, author: User
) -> Override:
    """A TA's score for the whole submission; it wins over every grading."""
    top = submission.item.max_score
    if not score.is_finite() or not Decimal(0) <= score <= top:
        raise Refused(_("The score must be between 0 and %(top)s.") % {"top": top})
    with transaction.atomic():
        override = Override.objects.create(
            submission=submission, author=author, score=score, comment=comment
        )
        _set_status(
            submission_id=submission.pk, new=Status.GRADED, allowed_from=(Status.NEEDS_REVIEW,)
        )
    return override
