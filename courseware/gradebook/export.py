"""The gradebook as a CSV that Canvas's gradebook import reads (Grades → Import).

The shape is the one Canvas itself exports and its importer (GradebookImporter) expects:

    Student,ID,SIS User ID,SIS Login ID,Section,Vector add,…,Final Points
    Points Possible,,,,,10,…,(read only)
    "Lovelace, Ada",,alice,alice@example.edu,Fall 2026,9.5,…,27.38

* The header's first five columns identify the student and must be exactly these: Canvas
  finds the student by `ID` (its own user id), else `SIS User ID`, else `SIS Login ID`, else
  the `Student` name. This site does not know Canvas's user ids, so `ID` is left empty;
  `SIS User ID` holds the username and `SIS Login ID` the email (the usual login at a school
  whose Canvas signs in by email), and `Student` the full name (the username when none).
* Every later column is an assignment. Canvas's own export names one `Title (1234)`, where
  1234 is the assignment's id in Canvas. This site cannot know that id, and a number of its
  own there would name some other Canvas assignment, so a column is named by the item's
  English title alone: Canvas then matches an assignment of that title, or offers to create
  one.
* The first data row has `Points Possible` in the first column and each item's maximum score
  under it; it is the only place for the maxima (no "(max)" student).
* The last column, `Final Points`, is the student's total. Canvas treats a trailing column of
  that name as read-only and skips it on import, so it is there for people only.
* Scores are rounded to two decimals with a dot; an item never handed in is left empty
  (Canvas reads an empty cell as "no grade", not 0).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Protocol

from courseware.gradebook.numbers import score_for_export
from courseware.gradebook.selectors import Gradebook, GradebookRow

STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "Points Possible"
TOTAL_COLUMN = "Final Points"
READ_ONLY = "(read only)"  # what Canvas writes under a read-only column's points possible


class Writable(Protocol):
    def write(self, text: str, /) -> object: ...


def assignment_headers(book: Gradebook) -> list[str]:
    """One column name per item; a title two items share is told apart by the item's slug."""
    titles = [c.title_en for c in book.columns]
    return [
        f"{c.title_en} [{c.slug}]" if titles.count(c.title_en) > 1 else c.title_en
        for c in book.columns
    ]


def student_name(row: GradebookRow) -> str:
    return row.full_name or row.username


def canvas_rows(book: Gradebook) -> Iterable[list[str]]:
    section = book.offering.title
    yield [*STUDENT_COLUMNS, *assignment_headers(book), TOTAL_COLUMN]
    blank_identity = [""] * (len(STUDENT_COLUMNS) - 1)
    maxima = [score_for_export(c.max_score) for c in book.columns]
    yield [POINTS_POSSIBLE, *blank_identity, *maxima, READ_ONLY]
    for row in book.rows:
        scores = [row.cells[c.slug].score if c.slug in row.cells else None for c in book.columns]
        yield [
            student_name(row),
            "",  # Canvas's own user id: not known here
            row.username,
            row.email,
            section,
            *[score_for_export(s) for s in scores],
            score_for_export(row.total()),
        ]


def write_canvas_csv(book: Gradebook, out: Writable) -> None:
    writer = csv.writer(out)
    writer.writerows(canvas_rows(book))


def export_filename(book: Gradebook) -> str:
    return f"canvas-grades-{book.offering.course.slug}-{book.offering.slug}.csv"
