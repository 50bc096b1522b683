"""Fixtures for the notebook grader tests: a tiny nbgrader assignment and its submissions.

The tiny source notebook has a solution cell defining ``add``, a visible test, a test
cell with hidden tests, a manually graded markdown answer and a last visible test that
runs after the hidden one. Submissions are built from its release version, the way a
student would fill it in. Kernels here import nothing heavy, so a grading takes ~1-2 s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from graders.notebooks import NotebookExerciseSpec, grade_notebook, load_notebook_exercise

REPO = Path(__file__).resolve().parents[3]
NBGRADER_FILES = Path(nbformat.__file__).resolve().parents[1] / "nbgrader/tests/apps/files"
# A sandbox slot (so a uid) of our own: the code-exercise tests use slot 0, and their
# fork bomb exhausts that uid's process limit while it runs.
SLOT = 3
HIDDEN_MARKER = "SECRET-HIDDEN-MARKER"
HIDDEN_CALL = "add(40, 2)"

TINY_TOML = """\
slug = "tiny"
title = { en = "Tiny", zh = "小练习" }
source = "tiny.ipynb"

[limits]
cell_s = 4
total_s = 40
flood_kb = 256
output_kb = 4
"""


def nbgrader_cell(cell: Any, grade_id: str, *, grade: bool = False, solution: bool = False,
                  locked: bool = False, points: float | None = None) -> Any:  # fmt: skip
    meta: dict[str, Any] = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
    }
    if points is not None:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def tiny_source() -> Any:
    cells = [
        nbgrader_cell(new_markdown_cell("Write `add`."), "intro", locked=True),
        nbgrader_cell(
            new_code_cell(
                "def add(a, b):\n    ### BEGIN SOLUTION\n    return a + b\n    ### END SOLUTION"
            ),
            "answer",
            solution=True,
        ),
        nbgrader_cell(
            new_code_cell('assert add(1, 2) == 3, "add(1, 2) should be 3"\nprint("add works")'),
            "test-add",
            grade=True,
            points=2,
        ),
        nbgrader_cell(
            new_code_cell(
                "assert add(-1, 1) == 0\n### BEGIN HIDDEN TESTS\n"
                f'assert {HIDDEN_CALL} == 42, "{HIDDEN_MARKER}"\n### END HIDDEN TESTS'
            ),
            "test-hidden",
            grade=True,
            points=3,
        ),
        nbgrader_cell(
            new_markdown_cell("Why?\n\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION"),
            "why",
            grade=True,
            solution=True,
            points=1,
        ),
        nbgrader_cell(new_code_cell("assert add(2, 2) == 4"), "test-late", grade=True, points=1),
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    return nb


@pytest.fixture(scope="session")
def tiny_spec(tmp_path_factory: pytest.TempPathFactory) -> NotebookExerciseSpec:
    folder = tmp_path_factory.mktemp("exercises") / "ch99" / "tiny"
    folder.mkdir(parents=True)
    nbformat.write(tiny_source(), folder / "tiny.ipynb")
    (folder / "notebook.toml").write_text(TINY_TOML)
    return load_notebook_exercise(folder)


def fill(spec: NotebookExerciseSpec, answer: str | None = None, *, before_tests: Sequence[str] = (),
         after: dict[str, list[str]] | None = None, why: str | None = None,
         drop: tuple[str, ...] = (), replace: dict[str, str] | None = None) -> bytes:  # fmt: skip
    """A submission made from the release: ``answer`` for the solution cell, student
    cells ``before_tests`` (before the first test), ``after[grade_id]`` after that cell,
    cells in ``drop`` deleted, sources in ``replace`` swapped in."""
    nb = nbformat.reads(spec.release.decode(), as_version=4)
    cells = []
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id == "test-add":
            cells += [new_code_cell(code) for code in before_tests]
        if grade_id in drop:
            continue
        if grade_id == "answer" and answer is not None:
            cell.source = answer
        if grade_id == "why" and why is not None:
            cell.source = why
        if replace and grade_id in replace:
            cell.source = replace[grade_id]
        cells.append(cell)
        cells += [new_code_cell(code) for code in (after or {}).get(grade_id, [])]
    nb.cells = cells
    return nbformat.writes(nb).encode()


CORRECT = "def add(a, b):\n    return a + b"
WRONG = "def add(a, b):\n    return a - b"

_CACHE: dict[tuple[str, bytes], dict[str, Any]] = {}


@pytest.fixture(scope="session")
def graded(tiny_spec: NotebookExerciseSpec) -> Callable[..., dict[str, Any]]:
    """graded(submission_bytes) -> report, each distinct submission graded once."""

    def run(submission: bytes, spec: NotebookExerciseSpec | None = None) -> dict[str, Any]:
        spec = spec or tiny_spec
        key = (str(spec.path), submission)
        if key not in _CACHE:
            # A plain dict for the tests: they read optional fields (message, outputs)
            # without narrowing, and a None there fails the test anyway.
            _CACHE[key] = cast(dict[str, Any], grade_notebook(spec, submission, slot=SLOT))
        return _CACHE[key]

    return run


def cell(report: dict[str, Any], grade_id: str) -> dict[str, Any]:
    return next(c for c in report["cells"] if c["grade_id"] == grade_id)


def student_visible(report: dict[str, Any]) -> str:
    """Every field a student is shown: the message and each cell's output."""
    return "\n".join([report["message"] or ""] + [c["output"] or "" for c in report["cells"]])


def solved_release(spec: NotebookExerciseSpec) -> bytes:
    """The release with the source's solution cells copied in, as a student would."""
    source = nbformat.read(spec.source_path, as_version=4)
    answers = {
        c.metadata.nbgrader["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    release = nbformat.reads(spec.release.decode(), as_version=4)
    for c in release.cells:
        grade_id = c.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            c.source = (
                answers[grade_id]
                .replace("### BEGIN SOLUTION\n", "")
                .replace("### END SOLUTION", "")
            )
    return nbformat.writes(release).encode()
