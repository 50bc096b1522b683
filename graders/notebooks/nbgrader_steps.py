"""nbgrader's own preprocessors, run in the trusted parent against a throwaway gradebook.

nbgrader keeps source cells, checksums and grades in a SQLite gradebook that is not
safe for concurrent workers, so every call here gets a fresh one in a temp dir
(:func:`throwaway_gradebook`) and nothing is shared between gradings.

* :func:`generate` runs generate_assignment's pipeline on the source notebook: it
  saves the source cells (hidden tests included) into the gradebook and returns the
  student ("release") version.
* :func:`restore` runs autograde's sanitizing pipeline on a submission: locked and
  test cells come back from the gradebook (OverwriteCells, deleted test cells added
  back), duplicated ids are dropped, outputs cleared, the kernelspec overwritten.
* :func:`score` runs SaveAutoGrades on the executed notebook and reads the grades
  back, so scores and needs-manual-grade flags follow nbgrader's determine_grade.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import nbgrader
from nbformat import NotebookNode

from graders.errors import GraderError

ASSIGNMENT = "assignment"
STUDENT = "student"
_LOG = logging.getLogger("graders.notebooks.nbgrader")
# nbgrader warns about every restored cell; without a handler of its own, Python's
# last-resort handler would print that to stderr of every CLI run.
_LOG.addHandler(logging.NullHandler())


@dataclass(frozen=True)
class Gradebook:
    db_url: str
    notebook_id: str

    def resources(self) -> dict[str, Any]:
        return {
            "nbgrader": {
                "notebook": self.notebook_id,
                "assignment": ASSIGNMENT,
                "student": STUDENT,
                "db_url": self.db_url,
            }
        }


@dataclass(frozen=True)
class CellGrade:
    grade_id: str
    score: float
    max_score: float
    auto_score: float | None
    needs_manual_grade: bool


@dataclass(frozen=True)
class NotebookGrades:
    score: float
    max_score: float
    needs_manual_grade: bool
    cells: dict[str, CellGrade]


@functools.cache
def _alembic_head() -> str:
    """The schema revision nbgrader stamps into a new gradebook, read in-process.

    nbgrader.api.get_alembic_version runs the ``alembic`` executable (found on PATH, or
    not: a worker started as ``.venv/bin/python`` has no venv on PATH) for every new
    gradebook; a throwaway gradebook per grading makes that a subprocess per grading.
    """
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(Path(nbgrader.__file__).parent / "alembic"))
    head = ScriptDirectory.from_config(config).get_current_head()
    if head is None:
        raise GraderError("nbgrader's alembic scripts have no head revision")
    return head


def _use_in_process_alembic_head() -> None:
    import nbgrader.api

    nbgrader.api.get_alembic_version = _alembic_head


@contextlib.contextmanager
def throwaway_gradebook(notebook_id: str = "notebook") -> Iterator[Gradebook]:
    folder = Path(tempfile.mkdtemp(prefix="nbgrader-gradebook-"))
    try:
        book = Gradebook(f"sqlite:///{folder / 'gradebook.db'}", notebook_id)
        from nbgrader.api import Gradebook as NbGraderGradebook

        _use_in_process_alembic_head()
        with NbGraderGradebook(book.db_url) as gb:
            gb.update_or_create_assignment(ASSIGNMENT)
        yield book
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(steps: list[Any], nb: NotebookNode, resources: dict[str, Any]) -> NotebookNode:
    for step in steps:
        nb, resources = step.preprocess(nb, resources)
    return nb


def generate(source: NotebookNode, book: Gradebook) -> tuple[NotebookNode, NotebookNode]:
    """generate_assignment's preprocessors, in its order: (the source as saved into the
    gradebook, hidden tests included; the release version).

    IncludeHeaderFooter (no header configured) and InstantiateTests (needs an autotest
    YAML per course) are left out.
    """
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearHiddenTests,
        ClearMarkScheme,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        LockCells,
        SaveCells,
    )

    resources = book.resources()
    saving = [
        LockCells(log=_LOG),
        ClearSolutions(log=_LOG),
        ClearOutput(log=_LOG),
        CheckCellMetadata(log=_LOG),
        ComputeChecksums(log=_LOG),
        SaveCells(log=_LOG),  # before ClearHiddenTests: the gradebook keeps the hidden tests
    ]
    releasing = [
        ClearHiddenTests(log=_LOG),
        ClearMarkScheme(log=_LOG),
        ComputeChecksums(log=_LOG),
        CheckCellMetadata(log=_LOG),
    ]
    saved = _run(saving, copy.deepcopy(source), resources)
    release = _run(releasing, copy.deepcopy(saved), resources)
    return saved, release


def restore(submission: NotebookNode, release: NotebookNode, book: Gradebook) -> NotebookNode:
    """autograde's sanitize step (OverwriteCells with deleted cells added back).

    Before nbgrader's steps, the nbgrader metadata of every cell whose grade_id the
    release knows is reset to the release's: OverwriteCells restores sources but not a
    test cell whose ``grade`` flag the student cleared (it would then fail its own
    checksum check and stop the whole autograde).
    """
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearOutput,
        DeduplicateIds,
        OverwriteCells,
        OverwriteKernelspec,
    )

    nb = copy.deepcopy(submission)
    known = {
        cell.metadata.nbgrader["grade_id"]: cell.metadata.nbgrader
        for cell in release.cells
        if "grade_id" in cell.metadata.get("nbgrader", {})
    }
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader")
        if isinstance(meta, dict) and meta.get("grade_id") in known:
            cell.metadata.nbgrader = copy.deepcopy(known[meta["grade_id"]])
    steps = [
        ClearOutput(log=_LOG),
        DeduplicateIds(log=_LOG),
        OverwriteKernelspec(log=_LOG),
        OverwriteCells(log=_LOG, add_missing_cells=True),
        CheckCellMetadata(log=_LOG),
    ]
    # Cells OverwriteCells adds back hold plain dicts inside: make it NotebookNodes again.
    return nbformat.from_dict(_run(steps, nb, book.resources()))


def score(executed: NotebookNode, book: Gradebook) -> NotebookGrades:
    """SaveAutoGrades into the throwaway gradebook, then read nbgrader's figures back."""
    from nbgrader.api import Gradebook as NbGraderGradebook
    from nbgrader.preprocessors import SaveAutoGrades

    with warnings.catch_warnings():  # nbgrader's own SQLAlchemy autoflush warnings
        warnings.simplefilter("ignore")
        with NbGraderGradebook(book.db_url) as gb:
            gb.update_or_create_student(STUDENT)
            gb.update_or_create_submission(ASSIGNMENT, STUDENT)
        _run([SaveAutoGrades(log=_LOG)], copy.deepcopy(executed), book.resources())
    with NbGraderGradebook(book.db_url) as gb:
        notebook = gb.find_submission_notebook(book.notebook_id, ASSIGNMENT, STUDENT)
        cells = {
            grade.name: CellGrade(
                grade_id=grade.name,
                score=float(grade.score or 0.0),
                max_score=float(grade.max_score),
                auto_score=None if grade.auto_score is None else float(grade.auto_score),
                needs_manual_grade=bool(grade.needs_manual_grade),
            )
            for grade in notebook.grades
        }
        return NotebookGrades(
            score=float(notebook.score),
            max_score=float(notebook.max_score),
            needs_manual_grade=bool(notebook.needs_manual_grade),
            cells=cells,
        )


def release_of(source: NotebookNode, notebook_id: str = "notebook") -> NotebookNode:
    """The student version of ``source`` (its own throwaway gradebook)."""
    with throwaway_gradebook(notebook_id) as book:
        return generate(source, book)[1]


def to_bytes(nb: NotebookNode) -> bytes:
    return (nbformat.writes(nb) + "\n").encode("utf-8")
