"""Which students the gradebook page shows: the plain GET form above the table.

Ticking a mark keeps the students with that mark on at least one item (ticking two keeps
those with either: the page is a to-do list, "everything that needs me"). The search keeps
students whose username, name or email contains the text.
"""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.utils.translation import gettext_lazy as _

from courseware.gradebook.selectors import GradebookCell, GradebookRow

SEARCH_MAX_LENGTH = 100

# Form field → whether a cell has that mark.
MARKS: dict[str, Callable[[GradebookCell], bool]] = {
    "needs_person": lambda cell: cell.needs_person,
    "error": lambda cell: cell.error,
    "flags": lambda cell: bool(cell.flags),
    "late": lambda cell: cell.late,
    "provisional": lambda cell: cell.provisional,
}


class GradebookFilterForm(forms.Form):
    needs_person = forms.BooleanField(label=_("needs a person"), required=False)
    error = forms.BooleanField(label=_("errors"), required=False)
    flags = forms.BooleanField(label=_("flags"), required=False)
    late = forms.BooleanField(label=_("late"), required=False)
    provisional = forms.BooleanField(label=_("provisional"), required=False)
    q = forms.CharField(
        label=_("Student"),
        required=False,
        max_length=SEARCH_MAX_LENGTH,
        strip=True,
        error_messages={
            "max_length": _("Search with at most %(limit_value)d characters of a name.")
        },
    )

    def chosen_marks(self) -> list[str]:
        return [name for name in MARKS if self.cleaned_data.get(name)]

    def is_filtering(self) -> bool:
        return self.is_valid() and bool(self.chosen_marks() or self.cleaned_data["q"])


def row_matches_search(row: GradebookRow, text: str) -> bool:
    needle = text.casefold()
    return any(needle in value.casefold() for value in (row.username, row.full_name, row.email))


def row_has_any_mark(row: GradebookRow, marks: list[str]) -> bool:
    return any(MARKS[mark](cell) for cell in row.cells.values() for mark in marks)


def filtered_rows(rows: list[GradebookRow], form: GradebookFilterForm) -> list[GradebookRow]:
    """The rows the form keeps; all of them when it is empty or invalid (the page then says
    what is wrong with the search, and hides nobody)."""
    if not form.is_valid():
        return rows
    marks = form.chosen_marks()
    text = form.cleaned_data["q"]
    return [
        row
        for row in rows
        if (not marks or row_has_any_mark(row, marks))
        and (not text or row_matches_search(row, text))
    ]
