"""The gradebook of an offering: every student × every item, from the rows that hold scores.

Coding and notebook exercises count the student's best graded submission (a TA's override or
hand grades included, late penalty applied); quizzes count the best attempt per question.
Each cell also remembers which submission gave its score (the page links to its report) and
what a TA should know about the student's work on that item: waiting for a person, an error,
flags raised by the grader, lateness, an override.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Q

from courseware.courses.models import Enrolment, Item, ItemKind, Offering, Role
from courseware.quizzes.selectors import quiz_scores_for
from courseware.submissions.models import Status, Submission, Verdict
from courseware.submissions.selectors import (
    LatePenalties,
    submission_effective_score,
    submissions_with_scores,
)

# What the gradebook reads; queued and running work has nothing to show yet.
FINISHED_STATUSES = (Status.GRADED, Status.NEEDS_REVIEW, Status.FAILED)
# A student's latest work ending in one of these (or the grader failing) is an "error".
ERROR_VERDICTS = (Verdict.ERROR, Verdict.TIMEOUT)


@dataclass(frozen=True)
class GradebookColumn:
    slug: str
    title_en: str
    title_zh: str
    kind: str
    max_score: Decimal

    def title(self, language: str | None) -> str:
        if language and language.startswith("zh") and self.title_zh:
            return self.title_zh
        return self.title_en


@dataclass
class GradebookCell:
    """One student's standing on one item."""

    score: Decimal | None = None
    # The submission whose score counts; failing that, the one a TA should open next.
    submission_id: int | None = None
    needs_person: bool = False
    error: bool = False
    flags: list[str] = field(default_factory=list)
    late: bool = False
    overridden: bool = False
    # The counted score's performance points were measured on a busy machine and a quiet
    # worker will grade it again (courseware/submissions/provisional.py).
    provisional: bool = False


@dataclass
class GradebookRow:
    user_id: int
    username: str
    full_name: str
    email: str
    cells: dict[str, GradebookCell] = field(default_factory=dict)  # item slug → cell
    pending_review: int = 0

    @property
    def scores(self) -> dict[str, Decimal | None]:
        return {slug: cell.score for slug, cell in self.cells.items()}

    def cell(self, slug: str) -> GradebookCell:
        return self.cells.setdefault(slug, GradebookCell())

    def total(self) -> Decimal:
        return sum((c.score for c in self.cells.values() if c.score is not None), Decimal(0))


@dataclass
class Gradebook:
    offering: Offering
    columns: list[GradebookColumn]  # in the chapter's order: exercises, notebook, quiz
    rows: list[GradebookRow]

    def max_total(self) -> Decimal:
        return sum((c.max_score for c in self.columns), Decimal(0))


def gradebook_columns(offering: Offering) -> list[GradebookColumn]:
    """The course's published items in the order students meet them (Item's own ordering:
    chapter, then position from chapter.toml); a quiz only once its questions are synced."""
    items = Item.objects.filter(course_id=offering.course_id, is_published=True).filter(
        Q(kind__in=(ItemKind.EXERCISE, ItemKind.NOTEBOOK))
        | Q(kind=ItemKind.QUIZ, quiz__isnull=False)
    )
    return [
        GradebookColumn(
            slug=item.slug,
            title_en=item.title_en,
            title_zh=item.title_zh,
            kind=item.kind,
            max_score=item.max_score,
        )
        for item in items
    ]


def _student_rows(offering: Offering) -> dict[int, GradebookRow]:
    students = (
        Enrolment.objects.filter(offering=offering, role=Role.STUDENT)
        .select_related("user")
        .order_by("user__username")
    )
    return {
        e.user_id: GradebookRow(
            user_id=e.user_id,
            username=e.user.get_username(),
            full_name=e.user.get_full_name(),
            email=e.user.email,
        )
        for e in students
    }


CellKey = tuple[int, str]  # (user id, item slug)


@dataclass
class _Fold:
    """Folds a class's submissions, newest first, into the rows' cells."""

    rows: dict[int, GradebookRow]
    penalties: LatePenalties = field(default_factory=LatePenalties)
    # Where a cell without a score links: the newest work waiting for a person, else the
    # newest finished work (what a TA opens next).
    newest: dict[CellKey, int] = field(default_factory=dict)
    newest_waiting: dict[CellKey, int] = field(default_factory=dict)

    def add(self, submission: Submission) -> None:
        row = self.rows[submission.user_id]
        key = (submission.user_id, submission.item.slug)
        cell = row.cell(submission.item.slug)
        grading = submission.current_grading
        if key not in self.newest:
            # The newest finished submission says whether the student's latest try broke.
            self.newest[key] = submission.pk
            cell.error = submission.status == Status.FAILED or (
                grading is not None and grading.verdict in ERROR_VERDICTS
            )
        if grading is not None:
            for flag in grading.report.get("flags") or []:
                if flag and str(flag) not in cell.flags:
                    cell.flags.append(str(flag))
        if submission.status == Status.NEEDS_REVIEW:
            row.pending_review += 1
            cell.needs_person = True
            self.newest_waiting.setdefault(key, submission.pk)
            return  # not final until a person has looked
        if submission.status == Status.GRADED:
            self._count(cell, submission)

    def _count(self, cell: GradebookCell, submission: Submission) -> None:
        score = submission_effective_score(
            submission, submission.current_grading, penalties=self.penalties
        )
        if score is not None and (cell.score is None or score > cell.score):
            overridden = submission.overrides.first() is not None
            cell.score = score
            cell.submission_id = submission.pk
            cell.overridden = overridden
            grading = submission.current_grading
            cell.provisional = not overridden and grading is not None and grading.provisional
            cell.late = submission.is_late and not overridden

    def link_unscored(self) -> None:
        for (user_id, slug), newest in self.newest.items():
            cell = self.rows[user_id].cell(slug)
            if cell.submission_id is None:
                cell.submission_id = self.newest_waiting.get((user_id, slug), newest)


def gradebook_for(*, offering: Offering) -> Gradebook:
    rows = _student_rows(offering)
    columns = gradebook_columns(offering)

    # Gradings, overrides and hand grades come in a few queries for the whole class, and each
    # item's late policy once: the gradebook's queries do not grow with the class.
    submissions = submissions_with_scores(
        Submission.objects.filter(offering=offering, user_id__in=rows, status__in=FINISHED_STATUSES)
    )
    fold = _Fold(rows=rows)
    for submission in submissions:  # the model's ordering: newest first
        fold.add(submission)
    fold.link_unscored()

    for quiz in quiz_scores_for(offering=offering):
        if quiz.user_id in rows and quiz.answered:
            # A quiz never opened has no score, like an exercise never submitted.
            rows[quiz.user_id].cell(quiz.quiz).score = quiz.score
    return Gradebook(offering=offering, columns=columns, rows=list(rows.values()))


def offerings_for_gradebook(*, offering_ids: list[int] | None) -> list[Offering]:
    qs = Offering.objects.select_related("course").order_by("-id")
    return list(qs if offering_ids is None else qs.filter(pk__in=offering_ids))
