"""Starting a similarity run for a TA and carrying it out in a Celery worker.

The final submission of a student is their latest one of the exercise in the offering, as the
batch regrade's "latest" scope takes it: what the student handed in last. Course staff's own
submissions (a TA trying the exercise) are left out.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from courseware.courses.models import Enrolment, Item, ItemKind, Offering, Role
from courseware.courses.selectors import user_is_staff_of
from courseware.refusals import Refused
from courseware.similarity import compare
from courseware.similarity.models import RunStatus, SimilarityRun, SimilarPair
from courseware.submissions.models import Submission, SubmissionKind

logger = logging.getLogger(__name__)

# What every student was given or shown: fingerprints found in these never count.
GIVEN_FILES = ("starter.py", "reference.py", "naive.py")


def final_submissions(*, item: Item, offering: Offering) -> QuerySet[Submission]:
    """Each student's latest code submission of the item in the offering, oldest student first."""
    staff = Enrolment.objects.filter(offering=offering, role__in=[Role.TA, Role.INSTRUCTOR]).values(
        "user_id"
    )
    qs = Submission.objects.filter(item=item, offering=offering, kind=SubmissionKind.CODE).exclude(
        user_id__in=staff
    )
    latest = qs.values("user_id").annotate(latest=Max("id")).order_by().values("latest")
    return Submission.objects.filter(pk__in=latest).select_related("user").order_by("user_id")


def given_code(item: Item) -> list[str]:
    folder = Path(settings.GRADERS_EXERCISES_ROOT) / item.source_path
    return [
        (folder / name).read_text(encoding="utf-8")
        for name in GIVEN_FILES
        if (folder / name).is_file()
    ]


def run_start(*, item: Item, offering: Offering, requested_by: User) -> SimilarityRun:
    """Record who asked for which report, then queue the comparison (after the commit, so the
    worker finds the row)."""
    if not user_is_staff_of(user=requested_by, offering=offering):
        raise Refused(
            _("Only the offering's TAs and instructors can compare its submissions."),
            status_code=403,
        )
    if item.kind != ItemKind.EXERCISE or item.course_id != offering.course_id:
        raise Refused(_("Choose a coding exercise of this offering's course."))
    run = SimilarityRun.objects.create(item=item, offering=offering, requested_by=requested_by)
    logger.info(
        "similarity run %s: %s in %s, asked by %s",
        run.pk,
        item.slug,
        offering,
        requested_by.get_username(),
    )
    from courseware.similarity.tasks import similarity_run  # the task imports this module

    transaction.on_commit(lambda: similarity_run.delay(run.pk))
    return run


def run_execute(run_id: int) -> SimilarityRun:
    """Compare every pair of final submissions and store those that share anything, with the
    progress written as it goes. A run already finished is left as it is (a message delivered
    twice)."""
    run = SimilarityRun.objects.select_related("item", "offering").get(pk=run_id)
    if run.status in (RunStatus.DONE, RunStatus.FAILED):
        return run
    submissions = list(final_submissions(item=run.item, offering=run.offering))
    run.pairs.all().delete()  # a run taken back after a lost worker starts over
    run.status, run.students = RunStatus.RUNNING, len(submissions)
    run.pairs_total, run.pairs_done = compare.pair_count(len(submissions)), 0
    run.save(update_fields=["status", "students", "pairs_total", "pairs_done"])

    def progress(done: int) -> None:
        SimilarityRun.objects.filter(pk=run.pk).update(pairs_done=done)

    sources = [compare.Source(key=s.pk, code=s.source) for s in submissions]
    try:
        found = [
            SimilarPair(
                run=run,
                first_id=m.first,
                second_id=m.second,
                similarity=m.similarity,
                first_share=m.first_share,
                second_share=m.second_share,
                tokens=m.tokens,
                flagged=m.flagged,
                first_spans=m.first_spans,
                second_spans=m.second_spans,
            )
            for m in compare.matches(sources, given_code(run.item), progress)
            if m.similarity >= compare.LIST_AT
        ]
    except Exception as error:  # the TA reads why on the run's page instead of waiting forever
        logger.exception("similarity run %s failed", run.pk)
        run.status, run.error, run.finished_at = RunStatus.FAILED, str(error), timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])
        return run
    SimilarPair.objects.bulk_create(found)
    run.status, run.finished_at = RunStatus.DONE, timezone.now()
    run.pairs_done = run.pairs_total
    run.save(update_fields=["status", "finished_at", "pairs_done"])
    logger.info(
        "similarity run %s: %s pairs share code, %s flagged",
        run.pk,
        len(found),
        sum(p.flagged for p in found),
    )
    return run
