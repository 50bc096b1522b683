"""The export reads like a Canvas gradebook import file.

`samples/canvas_gradebook_import.csv` is written by hand (nobody real in it) in the shape Canvas's
own gradebook export has and its importer reads (Canvas: Grades → Import; the importer is
`GradebookImporter` in instructure/canvas-lms): the student columns `Student`, `ID`,
`SIS User ID`, `SIS Login ID`, `Section`; one column per assignment (Canvas names its own
`Title (assignment id)`); trailing read-only columns such as `Final Points`, which the importer
drops; a first data row `Points Possible` (Canvas indents it by four spaces; the importer finds
it by the words) with `(read only)` under the read-only columns; then one row per student.

Both files are parsed with the csv module and read by `read_like_canvas`, which follows the
importer's rules, and their structures are compared.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from courseware.courses.models import Course, Enrolment, Item, Offering, Role
from courseware.gradebook.export import STUDENT_COLUMNS
from courseware.submissions.models import Status
from tests.conftest import Cast
from tests.courseware.gradebook.builders import submit

SAMPLE = Path(__file__).parent / "samples" / "canvas_gradebook_import.csv"
# The importer drops trailing columns whose name matches this (they are computed by Canvas).
READ_ONLY = re.compile(
    r"Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade"
)
SCORE = re.compile(r"^(\d+(\.\d{1,2})?)?$")  # empty, or a number with at most 2 decimals, a dot


@dataclass
class CanvasFile:
    student_columns: list[str]
    assignments: list[str]
    points_possible: list[str]
    students: list[dict[str, str]]  # identity columns and assignment → score
    widths: set[int]


def read_like_canvas(text: str) -> CanvasFile:
    """The file as Canvas's GradebookImporter takes it in: the header row's student columns
    (Student, ID, SIS User ID, SIS Login ID, ending at Section), the assignment columns after
    them less the trailing read-only ones, a `Points Possible` row, and the student rows."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    assert re.search("Student", header[0]) and re.search("ID", header[1]), header
    assert re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3])
    assert re.search("Section", header[4]), "the last student column must be Section"
    assignments = header[5:]
    while assignments and READ_ONLY.search(assignments[-1]):
        assignments.pop()
    points: list[str] = []
    students = []
    for row in rows[1:]:
        if re.search("Points Possible", row[0]):
            assert not points, "one Points Possible row"
            points = row[5 : 5 + len(assignments)]
            continue
        student = dict(zip(header[:5], row[:5], strict=True))
        student.update(zip(assignments, row[5 : 5 + len(assignments)], strict=True))
        students.append(student)
    return CanvasFile(
        student_columns=header[:5],
        assignments=assignments,
        points_possible=points,
        students=students,
        widths={len(r) for r in rows},
    )


def exported(client: Client, offering: Offering) -> tuple[str, CanvasFile]:
    response = client.get(f"/gradebook/{offering.pk}/canvas.csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="canvas-grades-')
    text = response.content.decode("utf-8")
    return text, read_like_canvas(text)


@pytest.fixture
def tara(cast: Cast) -> Client:
    client = Client()
    client.force_login(cast.tara)
    return client


def test_the_sample_reads_like_a_canvas_file() -> None:
    sample = read_like_canvas(SAMPLE.read_text(encoding="utf-8"))
    assert sample.assignments == ["Vector add (51234)", "Roofline quiz (51240)"]
    assert sample.points_possible == ["10.00", "5.00"]
    assert [s["SIS Login ID"] for s in sample.students] == ["ada@example.edu", "grace@example.edu"]


def test_the_export_has_the_samples_structure(cast: Cast, tara: Client) -> None:
    cast.alice.first_name, cast.alice.last_name = "Alice", "Liddell"
    cast.alice.email = "alice@example.edu"
    cast.alice.save()
    submit(cast.alice, cast.item, cast.offering, scores=[35.700000000000000])
    submit(cast.bob, cast.item, cast.offering, scores=[9.375])
    text, ours = exported(tara, cast.offering)
    sample = read_like_canvas(SAMPLE.read_text(encoding="utf-8"))

    assert ours.student_columns == sample.student_columns == list(STUDENT_COLUMNS)
    assert len(ours.widths) == 1 and len(sample.widths) == 1  # every row as wide as its header
    header = next(csv.reader(io.StringIO(text)))
    assert READ_ONLY.search(header[-1]) and READ_ONLY.search(sample_header()[-1])
    items = Item.objects.filter(course=cast.item.course, is_published=True)
    assert ours.assignments == [i.title_en for i in items.order_by("chapter", "position", "slug")]
    assert len(ours.points_possible) == len(ours.assignments)
    for value in [*ours.points_possible, *(v for s in ours.students for v in s.values())]:
        assert "(max)" not in value
    for student in ours.students:
        for title in ours.assignments:
            assert SCORE.match(student[title]), (title, student[title])
    for value in sample.points_possible:
        assert SCORE.match(value)

    by_login = {s["SIS User ID"]: s for s in ours.students}
    assert set(by_login) == {"alice", "bob"}  # students only: no max row, no staff
    alice = by_login["alice"]
    assert alice["Student"] == "Alice Liddell" and alice["SIS Login ID"] == "alice@example.edu"
    assert alice["Section"] == cast.offering.title and alice["ID"] == ""
    assert alice[cast.item.title_en] == "35.7"
    assert by_login["bob"][cast.item.title_en] == "9.38"
    assert by_login["bob"]["Student"] == "bob"  # no full name: the username
    vector_add = ours.assignments.index(cast.item.title_en)
    assert Decimal(ours.points_possible[vector_add]) == cast.item.max_score


def sample_header() -> list[str]:
    return next(csv.reader(io.StringIO(SAMPLE.read_text(encoding="utf-8"))))


def test_work_not_handed_in_or_waiting_for_a_person_is_left_empty(cast: Cast, tara: Client) -> None:
    submit(cast.alice, cast.item, cast.offering, scores=[4], status=Status.NEEDS_REVIEW)
    _, ours = exported(tara, cast.offering)
    for student in ours.students:
        assert student[cast.item.title_en] == ""
    lines = _total_column(tara, cast.offering)
    assert lines == ["(read only)", "0", "0"]


def _total_column(client: Client, offering: Offering) -> list[str]:
    text, _ = exported(client, offering)
    return [row[-1] for row in list(csv.reader(io.StringIO(text)))[1:]]


def test_the_export_of_an_offering_that_is_not_yours_is_refused(cast: Cast, tara: Client) -> None:
    other_course = Course.objects.create(slug="other-course", title="Another course")
    other = Offering.objects.create(course=other_course, slug="2026-fall", title="Other")
    otto = User.objects.create_user(username="otto")
    Enrolment.objects.create(user=otto, offering=other, role=Role.TA)
    path = f"/gradebook/{cast.offering.pk}/canvas.csv"

    stranger_ta = Client()
    stranger_ta.force_login(otto)
    assert stranger_ta.get(path).status_code == 404
    for user in (cast.alice, cast.stranger):
        client = Client()
        client.force_login(user)
        assert client.get(path).status_code == 404
    assert Client().get(path).status_code == 302  # to the login page
    assert tara.get("/gradebook/999999/canvas.csv").status_code == 404
    assert tara.get("/gradebook/99999999999999999999/canvas.csv").status_code == 404
    assert tara.get(f"/gradebook/{other.pk}/canvas.csv").status_code == 404


def test_scores_keep_their_rounding_in_totals(cast: Cast, tara: Client) -> None:
    submit(cast.alice, cast.item, cast.offering, scores=[5.7])
    notebook = Item.objects.get(slug="fusion-notebook")
    submit(cast.alice, notebook, cast.offering, scores=[1.005], cells=[{"score": 1.005}])
    total = _total_column(tara, cast.offering)[1]  # alice, first by username
    assert Decimal(total) == Decimal("6.71")
