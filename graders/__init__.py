"""Grading engine for the GPU-fundamentals course (standalone: no Django imports).

Public API::

    from graders import grade                 # exercise folder (or spec) + source -> Report
    from graders import profile               # a profile left for later by grade()
    from graders import load_exercise, iter_exercises, find_exercise, exercise_kind
    from graders import ExerciseSpec, Report, SpecError, GraderError

:func:`grade` is the one way in: the Celery task, the command line and the validator all call
it. It decides from the folder whether the exercise is code (``exercise.toml``) or a notebook
(``notebook.toml``) and returns a typed :class:`~graders.report.types.Report`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from graders.errors import GraderError, SpecError
from graders.report.types import ProfileRow, Report
from graders.spec.exercise import ExerciseSpec, find_exercise, iter_exercises, load_exercise

if TYPE_CHECKING:
    from graders.notebooks.spec import NotebookExerciseSpec

# The trusted side's large tensors (inputs drawn, outputs and inputs read back, the
# reference's results) in huge pages, as the sandbox's are (graders/sandbox/launch.py): a fresh
# 64 MiB tensor costs 70-80 ms of 4 KiB page faults on a KVM guest here and 13 ms so, and a
# vector-add grading makes dozens. torch reads this at its first large allocation.
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

ExerciseKind = Literal["code", "notebook"]


def exercise_kind(folder: Path | str) -> ExerciseKind:
    """Which kind of exercise a folder holds; SpecError when it holds neither or both."""
    folder = Path(folder)
    code, notebook = (folder / "exercise.toml").is_file(), (folder / "notebook.toml").is_file()
    if code and notebook:
        raise SpecError(f"{folder}: holds both exercise.toml and notebook.toml; keep one")
    if not (code or notebook):
        raise SpecError(f"{folder}: holds neither exercise.toml nor notebook.toml")
    return "code" if code else "notebook"


def grade(
    exercise: Path | str | ExerciseSpec | NotebookExerciseSpec,
    source: str | bytes,
    *,
    device: str | None = None,
    slot: int | None = None,
    profile: bool = True,
    compare: bool = True,
    on_graded: Callable[[Report], bool | None] | None = None,
) -> Report:
    """Grade one submission; never raises for anything the student did.

    ``exercise`` is an exercise folder, or a spec already loaded from one (the validator grades
    an in-memory copy with a shorter timed phase). ``device`` defaults to the exercise's first
    device; ``slot`` picks the sandbox uid and core (None: the first free one). ``profile`` and
    ``compare`` (time the reference and naive versions alongside) apply to code exercises.
    ``on_graded`` receives a code submission's report as soon as its grade is final, before
    the informative profile is taken; the report returned has the profile too, unless
    ``on_graded`` returned False: then the profile is left for :func:`profile`.

    Raises SpecError for a malformed exercise, ValueError for a device the exercise does not
    support, and GraderError when the grader itself broke: none of these is the student's fault.
    """
    # Imported here: loading specs (e.g. in a web process) must not import torch or nbgrader.
    from graders.notebooks.spec import NotebookExerciseSpec, load_notebook_exercise

    if isinstance(exercise, str | Path):
        folder = Path(exercise)
        if exercise_kind(folder) == "code":
            exercise = load_exercise(folder)
        else:
            exercise = load_notebook_exercise(folder)
    if isinstance(exercise, NotebookExerciseSpec):
        from graders.notebooks.grading import grade_notebook

        if device not in (None, "cpu"):
            raise ValueError(f"notebook exercise {exercise.slug} is graded on cpu, not {device!r}")
        return grade_notebook(exercise, source, slot=slot or 0)
    from graders.engine import grade_code

    return grade_code(
        exercise,
        source,
        device,
        slot=slot,
        profile=profile,
        compare=compare,
        on_graded=on_graded,
    )


def profile(
    exercise: Path | str | ExerciseSpec,
    source: str | bytes,
    *,
    device: str | None = None,
    slot: int | None = None,
) -> list[ProfileRow] | None:
    """The top operators of one call of a code submission, taken apart from its grading (whose
    ``on_graded`` left it for later): in a fresh sandbox, thrown away after. None when the
    submission no longer loads or the profile fails; it never changes a grade."""
    from graders.engine import profile_code

    spec = exercise if isinstance(exercise, ExerciseSpec) else load_exercise(Path(exercise))
    return profile_code(spec, source, device, slot=slot)


__all__ = [
    "ExerciseKind",
    "ExerciseSpec",
    "GraderError",
    "Report",
    "SpecError",
    "exercise_kind",
    "find_exercise",
    "grade",
    "iter_exercises",
    "load_exercise",
    "profile",
]
