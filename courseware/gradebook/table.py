"""What the gradebook page shows in each cell: the rounded score, where it links, its marks.

The template only lays these out; the decisions (which submission a cell opens, which marks it
carries, how a score is written) are made here, where a test can read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.urls import reverse
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from courseware.courses.models import ItemKind
from courseware.gradebook.filters import MARKS
from courseware.gradebook.numbers import score_for_people
from courseware.gradebook.selectors import (
    Gradebook,
    GradebookCell,
    GradebookColumn,
    GradebookRow,
)


@dataclass(frozen=True)
class Mark:
    name: str  # the filter's field name, and the CSS class `gb-mark-<name>`
    symbol: str
    label: str | Promise


# In the order they show in a cell and in the legend.
MARK_KINDS = (
    Mark("needs_person", "?", _("needs a person")),
    Mark("error", "!", _("error")),
    Mark("flags", "⚑", _("flags")),
    Mark("late", "◔", _("late")),
    Mark("provisional", "~", _("provisional: timed on a busy machine, to be graded again")),
    Mark("overridden", "✎", _("overridden by a person")),
)


@dataclass
class CellView:
    text: str
    url: str | None
    marks: list[Mark] = field(default_factory=list)
    flags: str = ""  # the flags' names, for the cell's tooltip


@dataclass
class ColumnView:
    slug: str
    title: str
    kind: str
    url: str
    max_text: str


@dataclass
class RowView:
    row: GradebookRow
    cells: list[CellView]
    total_text: str


@dataclass
class GradebookTable:
    columns: list[ColumnView]
    rows: list[RowView]
    max_total_text: str


def item_url(slug: str, kind: str) -> str:
    if kind == ItemKind.QUIZ:
        return reverse("quiz-detail", kwargs={"slug": slug})
    return reverse("exercise-detail", kwargs={"slug": slug})


def cell_marks(cell: GradebookCell) -> list[Mark]:
    def has(mark: Mark) -> bool:
        if mark.name == "overridden":
            return cell.overridden
        return MARKS[mark.name](cell)

    return [mark for mark in MARK_KINDS if has(mark)]


def cell_view(cell: GradebookCell | None, column: GradebookColumn) -> CellView:
    if cell is None:
        return CellView(text=score_for_people(None), url=None)
    if column.kind == ItemKind.QUIZ:
        # Quizzes have no per-student page: the quiz's own page shows a TA every question.
        url: str | None = item_url(column.slug, column.kind) if cell.score is not None else None
    elif cell.submission_id is not None:
        url = reverse("submission-detail", kwargs={"submission_id": cell.submission_id})
    else:
        url = None
    return CellView(
        text=score_for_people(cell.score),
        url=url,
        marks=cell_marks(cell),
        flags=", ".join(cell.flags),
    )


def gradebook_table(
    book: Gradebook, rows: list[GradebookRow], *, language: str | None
) -> GradebookTable:
    """The page's table for `rows` (the filtered ones) of the gradebook."""
    return GradebookTable(
        columns=[
            ColumnView(
                slug=c.slug,
                title=c.title(language),
                kind=c.kind,
                url=item_url(c.slug, c.kind),
                max_text=score_for_people(c.max_score),
            )
            for c in book.columns
        ],
        rows=[
            RowView(
                row=row,
                cells=[cell_view(row.cells.get(c.slug), c) for c in book.columns],
                total_text=score_for_people(row.total()),
            )
            for row in rows
        ],
        max_total_text=score_for_people(book.max_total()),
    )
