"""The gradebook of an offering: every student × every item, from the rows that hold scores.

Coding and notebook exercises count the student's best graded submission (a TA's override or
hand grades included, late penalty applied); quizzes count the best attempt per question.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from courseware.courses.models import Enrolment, Item, Offering, Role
from courseware.courses.selectors import item_list_published
from courseware.quizzes.selectors import quiz_scores_for
from courseware.submissions.models import Status, Submission
from courseware.submissions.selectors import (
    LatePenalties,
    submission_effective_score,
    submissions_with_scores,
)


@dataclass
class GradebookRow:
    username: str
    scores: dict[str, Decimal | None] = field(default_factory=dict)  # item slug → score
    pending_review: int = 0

    def total(self) -> Decimal:
        return sum((s for s in self.scores.values() if s is not None), Decimal(0))


@dataclass
class Gradebook:
    offering: Offering
    columns: list[tuple[str, Decimal]]  # (item slug, max score)
    rows: list[GradebookRow]


def _exercise_items(offering: Offering) -> list[Item]:
    return [i for i in item_list_published() if i.course_id == offering.course_id]


def gradebook_for(*, offering: Offering) -> Gradebook:
    students = (
        Enrolment.objects.filter(offering=offering, role=Role.STUDENT)
        .select_related("user")
        .order_by("user__username")
    )
    rows = {e.user_id: GradebookRow(username=e.user.get_username()) for e in students}
    items = _exercise_items(offering)
    columns = [(item.slug, item.max_score) for item in items]

    # Gradings, overrides and hand grades come in a few queries for the whole class, and each
    # item's late policy once: the gradebook's queries do not grow with the class.
    submissions = submissions_with_scores(
        Submission.objects.filter(
            offering=offering, user_id__in=rows, status__in=(Status.GRADED, Status.NEEDS_REVIEW)
        )
    )
    penalties = LatePenalties()
    for submission in submissions:
        row = rows[submission.user_id]
        if submission.status == Status.NEEDS_REVIEW:
            row.pending_review += 1
            continue  # not final until a person has looked
        score = submission_effective_score(
            submission, submission.current_grading, penalties=penalties
        )
        best = row.scores.get(submission.item.slug)
        if score is not None and (best is None or score > best):
            row.scores[submission.item.slug] = score

    quiz_max: dict[str, Decimal] = {}
    for quiz in quiz_scores_for(offering=offering):
        quiz_max[quiz.quiz] = quiz.max_score
        if quiz.user_id in rows:
            rows[quiz.user_id].scores[quiz.quiz] = quiz.score
    columns += sorted(quiz_max.items())
    return Gradebook(offering=offering, columns=columns, rows=list(rows.values()))


def offerings_for_gradebook(*, offering_ids: list[int] | None) -> list[Offering]:
    qs = Offering.objects.select_related("course").order_by("-id")
    return list(qs if offering_ids is None else qs.filter(pk__in=offering_ids))
