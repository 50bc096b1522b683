"""Notebook exercises: instructors' nbgrader notebooks, autograded in the sandbox.

Public API (no Django; importing this package does not import nbgrader or torch)::

    from graders.notebooks import (
        grade_notebook,            # (spec | folder | source.ipynb, submission bytes|str) -> report
        load_notebook_exercise,    # folder with notebook.toml -> NotebookExerciseSpec
        iter_notebook_exercises,   # root -> [NotebookExerciseSpec], sorted by path
        release_notebook,          # spec | source.ipynb -> student version (.ipynb bytes)
    )

See graders.notebooks.spec for the folder format and graders.notebooks.grading for the
flow and the threat model.
"""

from __future__ import annotations

from pathlib import Path

from graders.notebooks.spec import (
    NotebookExerciseSpec,
    NotebookLimits,
    iter_notebook_exercises,
    load_notebook_exercise,
)
from graders.report.types import Report


def grade_notebook(
    spec_or_source: NotebookExerciseSpec | str | Path,
    submission: bytes | str,
    *,
    slot: int = 0,
    include_notebook: bool = False,
) -> Report:
    """Grade a submitted notebook; never raises for anything the student did.

    The site and workers go through :func:`graders.grade`; this also takes a bare source
    .ipynb and can attach the executed notebook (the notebook command line uses both).
    """
    from graders.notebooks.grading import grade_notebook as grade_executed

    return grade_executed(spec_or_source, submission, slot=slot, include_notebook=include_notebook)


def release_notebook(spec_or_source: NotebookExerciseSpec | str | Path) -> bytes:
    """The student version (nbgrader's generate_assignment steps) as .ipynb bytes."""
    if isinstance(spec_or_source, NotebookExerciseSpec):
        return spec_or_source.release
    path = Path(spec_or_source)
    if path.is_dir():
        return load_notebook_exercise(path).release
    from graders.notebooks.spec import spec_for_source

    return spec_for_source(path).release


__all__ = [
    "NotebookExerciseSpec",
    "NotebookLimits",
    "grade_notebook",
    "iter_notebook_exercises",
    "load_notebook_exercise",
    "release_notebook",
]
