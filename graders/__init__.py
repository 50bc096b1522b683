"""Grading engine for the GPU-fundamentals course (standalone: no Django imports).

Public API::

    from graders import grade, load_exercise, iter_exercises, find_exercise
    from graders import ExerciseSpec, SpecError, GraderError
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import GraderError, SpecError
from .spec import ExerciseSpec, find_exercise, iter_exercises, load_exercise

if TYPE_CHECKING:
    from collections.abc import Callable


def grade(
    spec: ExerciseSpec, source: str | bytes, device: str | None = None, **options: Any
) -> dict[str, Any]:
    """Grade a submission; never raises for anything the student did (see engine.grade)."""
    # Imported lazily: loading specs (e.g. in a web process) must not import torch.
    from .authoring.kernelbench import prepare_source
    from .authoring.meta import load_meta
    from .engine import grade as _grade

    # A KernelBench-style submission may define only ModelNew; give it the exercise's entry.
    source = prepare_source(spec, load_meta(spec.path), source)
    run: Callable[..., dict[str, Any]] = _grade
    return run(spec, source, device, **options)


__all__ = [
    "ExerciseSpec",
    "GraderError",
    "SpecError",
    "find_exercise",
    "grade",
    "iter_exercises",
    "load_exercise",
]
