"""The trail of a submission's score: every grading, hand grade and override, with who and when.

Nothing is ever rewritten (a regrade adds a grading, a TA's score adds a row), so the trail is
the rows themselves, newest first. Staff see all of it; the student sees what a person did to
their score (hand grades and overrides, with the comments), not the workers' runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.contrib.auth.models import User
from django.utils.translation import gettext as _

from courseware.submissions.models import Submission, Verdict


@dataclass(frozen=True)
class TrailEntry:
    kind: str  # "grading", "hand_grade" or "override": also the CSS class of its row
    what: str
    when: datetime
    who: str
    score: Decimal | None
    comment: str = ""


def _person(user: User | None) -> str:
    if user is None:
        return _("the grader")
    return str(user.get_full_name() or user.get_username())


def _verdict(code: str | None) -> str:
    if code is None:
        return _("no verdict (the grader failed)")
    try:
        return str(Verdict(code).label)
    except ValueError:
        return code


def score_trail(submission: Submission, *, for_staff: bool) -> list[TrailEntry]:
    """The submission's score history, newest first (see the module's docstring for who sees
    what)."""
    entries: list[TrailEntry] = []
    if for_staff:
        gradings = list(submission.gradings.select_related("requested_by").order_by("created_at"))
        for number, grading in enumerate(gradings, start=1):
            verdict = _verdict(grading.verdict)
            what = (
                _("Autograded: %(verdict)s") % {"verdict": verdict}
                if number == 1
                else _("Regrade %(n)d: %(verdict)s") % {"n": number - 1, "verdict": verdict}
            )
            entries.append(
                TrailEntry(
                    "grading",
                    what,
                    grading.created_at,
                    _person(grading.requested_by),
                    grading.score,
                    grading.worker and _("worker %(name)s") % {"name": grading.worker},
                )
            )
    for grade in submission.manual_grades.select_related("author"):
        entries.append(
            TrailEntry(
                "hand_grade",
                _("Hand grade for cell %(cell)s") % {"cell": grade.grade_id},
                grade.created_at,
                _person(grade.author),
                grade.score,
                grade.comment,
            )
        )
    for override in submission.overrides.select_related("author"):
        entries.append(
            TrailEntry(
                "override",
                _("Score overridden"),
                override.created_at,
                _person(override.author),
                override.score,
                override.comment,
            )
        )
    return sorted(entries, key=lambda e: e.when, reverse=True)
