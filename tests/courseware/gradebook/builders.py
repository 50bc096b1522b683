"""Submissions in any state, written straight to the database, for the gradebook's tests.

The grading pipeline has tests of its own; here only the rows the gradebook reads matter, so
each helper writes them as they would stand after grading (and a regrade, a review...).
"""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth.models import User

from courseware.courses.models import Item, Offering
from courseware.submissions.models import Grading, Status, Submission, SubmissionKind


def submit(
    user: User,
    item: Item,
    offering: Offering,
    *,
    scores: list[float],
    status: str = Status.GRADED,
    late_days: int = 0,
    cells: list[dict[str, object]] | None = None,
    verdict: str = "correct",
    flags: list[str] | None = None,
) -> Submission:
    """A submission graded once per score in `scores` (more than one: it was regraded)."""
    submission = Submission.objects.create(
        user=user,
        item=item,
        offering=offering,
        kind=SubmissionKind.NOTEBOOK if cells is not None else SubmissionKind.CODE,
        source="x = 1",
        source_sha256="s" * 64,
        content_hash=item.content_hash,
        device_kind="cpu",
        is_late=late_days > 0,
        late_days=late_days,
        status=status,
    )
    for score in scores:
        report: dict[str, object] = {"verdict": verdict, "score": score, "max_score": 10}
        if cells is not None:
            report["cells"] = cells
        if flags:
            report["flags"] = flags
        Grading.objects.create(
            submission=submission,
            run_key=f"{submission.pk}-{Grading.objects.count()}",
            verdict=verdict,
            score=Decimal(str(score)),
            max_score=item.max_score,
            report=report,
            content_hash=item.content_hash,
        )
    return submission
