"""Reads for submissions: who may see one, and what the API and pages show of it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from courseware.courses.models import Item, Offering
from courseware.courses.selectors import offering_ids_staffed_by, policy_for, user_is_staff_of
from courseware.submissions.models import Grading, ManualGrade, Status, Submission
from graders.report_schema import upgrade

# The report fields a student sees; `internal_error` and the like stay with the staff.
STUDENT_HIDDEN_REPORT_KEYS = frozenset({"internal_error"})


def submission_get_visible(*, user: User, submission_id: int) -> Submission | None:
    """The submission if this user may see it: its author, or staff of its offering."""
    submission = (
        Submission.objects.select_related("item", "offering", "user")
        .filter(pk=submission_id)
        .first()
    )
    if submission is None:
        return None
    if submission.user_id == user.pk or user_is_staff_of(user=user, offering=submission.offering):
        return submission
    return None


def submission_list_for(*, user: User, item_id: int | None = None) -> QuerySet[Submission]:
    qs = Submission.objects.filter(user=user).select_related("item")
    return qs.filter(item_id=item_id) if item_id is not None else qs


def submissions_with_scores(qs: QuerySet[Submission]) -> QuerySet[Submission]:
    """`qs` with what submission_effective_score reads loaded alongside, for a list of them.

    The item and offering are joined in; gradings, overrides and hand grades come in one query
    each. Read row by row, every submission would cost a query for each of them instead, so a
    gradebook or a list would grow with the class. Pass a LatePenalties for the late ones.
    """
    return qs.select_related("item", "offering").prefetch_related(
        # Plain names, so each model's own ordering (newest first) holds in the cache, as
        # current_grading, overrides.first() and latest_manual_grades expect.
        "gradings",
        "overrides",
        "manual_grades",
    )


class LatePenalties:
    """Each (offering, item)'s late penalty per day, asked of its policy once.

    A list of submissions holds the same few (offering, item) pairs many times over; this keeps
    the policy reads to one per pair rather than one per late submission.
    """

    def __init__(self) -> None:
        self._per_day: dict[tuple[int, int], Decimal] = {}

    def per_day(self, *, offering: Offering, item: Item) -> Decimal:
        key = (offering.pk, item.pk)
        if key not in self._per_day:
            self._per_day[key] = policy_for(offering=offering, item=item).late_penalty_per_day
        return self._per_day[key]


def late_factor(submission: Submission, *, penalties: LatePenalties | None = None) -> Decimal:
    if not submission.is_late or submission.offering is None:
        return Decimal(1)
    penalty = (penalties or LatePenalties()).per_day(
        offering=submission.offering, item=submission.item
    )
    return max(Decimal(0), Decimal(1) - penalty * submission.late_days)


def latest_manual_grades(submission: Submission) -> dict[str, ManualGrade]:
    latest: dict[str, ManualGrade] = {}
    for grade in submission.manual_grades.all():  # newest first
        latest.setdefault(grade.grade_id, grade)
    return latest


def notebook_cells(submission: Submission, grading: Grading | None) -> list[dict[str, Any]]:
    """The report's cells, with each hand-graded cell's latest score and comment filled in."""
    if grading is None:
        return []
    manual = latest_manual_grades(submission)
    cells = []
    for cell in grading.report.get("cells") or []:
        cell = dict(cell)
        grade = manual.get(cell.get("grade_id", ""))
        if cell.get("needs_manual_grade") and grade is not None:
            cell["score"] = float(grade.score)
            cell["comment"] = grade.comment
            cell["graded_by_person"] = True
        cells.append(cell)
    return cells


def _graded_score(submission: Submission, grading: Grading) -> Decimal | None:
    if grading.report.get("cells"):
        # A notebook: autograded cells from the report, hand-graded ones from the people.
        return sum(
            (Decimal(str(c.get("score") or 0)) for c in notebook_cells(submission, grading)),
            Decimal(0),
        )
    return grading.score


def submission_effective_score(
    submission: Submission, grading: Grading | None, *, penalties: LatePenalties | None = None
) -> Decimal | None:
    """A person's latest override wins; else the grading's score less any late penalty.

    For many submissions, load them with submissions_with_scores and share one LatePenalties.
    """
    override = submission.overrides.first()
    if override is not None:
        return override.score
    if grading is None:
        return None
    score = _graded_score(submission, grading)
    if score is None:
        return None
    return (score * late_factor(submission, penalties=penalties)).quantize(Decimal("0.001"))


def submission_as_api(submission: Submission, *, for_staff: bool) -> dict[str, Any]:
    grading = submission.current_grading
    finished = submission.status in (Status.GRADED, Status.NEEDS_REVIEW, Status.FAILED)
    report: dict[str, Any] | None = None
    if grading is not None and finished:
        # Stored reports are never rewritten; read them in today's shape, whatever their age.
        stored = upgrade(
            grading.report,
            exercise=submission.item.slug,
            max_score=float(submission.item.max_score),
        )
        report = {
            k: v for k, v in stored.items() if for_staff or k not in STUDENT_HIDDEN_REPORT_KEYS
        }
    score = submission_effective_score(submission, grading) if finished else None
    if report is not None and report.get("cells"):
        report["cells"] = notebook_cells(submission, grading)
    return {
        "id": submission.pk,
        "exercise": submission.item.slug,
        "status": submission.status,
        "verdict": grading.verdict if (grading is not None and finished) else None,
        "score": float(score) if score is not None else None,
        "max_score": float(submission.item.max_score),
        "report": report,
        "created_at": submission.created_at.isoformat(),
        "is_late": submission.is_late,
    }


def review_queue_for(*, user: User) -> QuerySet[Submission]:
    """Submissions waiting for a person, in the offerings this user is staff of."""
    qs = Submission.objects.filter(status=Status.NEEDS_REVIEW).select_related("item", "user")
    offering_ids = offering_ids_staffed_by(user=user)
    if offering_ids is not None:
        qs = qs.filter(offering_id__in=offering_ids)
    return qs.order_by("created_at", "id")
