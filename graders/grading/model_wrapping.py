"""KernelBench-style submissions: a file that defines only a model class gets the entry.

KernelBench submissions define ``class ModelNew(nn.Module)`` and nothing else, while the
engine calls the exercise's entry function. An exercise whose ``exercise.toml`` has a
``[kernelbench]`` table (see :mod:`graders.spec.exercise`) carries, in its ``starter.py``, a block
between :data:`WRAPPER_BEGIN` and :data:`WRAPPER_END` that defines the entry by building
that class from a public seed. :func:`wrap_model_submission` appends that block to a
submission that defines the class but not the entry.

Everything comes from the spec: grading never reads authoring files (validate.toml).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from graders.errors import SpecError
from graders.grading.precheck import defines

if TYPE_CHECKING:
    from graders.spec.exercise import ExerciseSpec

WRAPPER_BEGIN = "# --- grader wrapper: begin (keep this block; the grader calls model_forward) ---"
WRAPPER_END = "# --- grader wrapper: end ---"


def wrapper_block(spec: ExerciseSpec) -> str:
    """The wrapper block of the exercise's starter.py, newline-terminated."""
    text = spec.starter
    begin, end = text.find(WRAPPER_BEGIN), text.find(WRAPPER_END)
    if begin < 0 or end < begin:
        raise SpecError(f"{spec.path / 'starter.py'}: the grader wrapper block is missing")
    return text[begin : end + len(WRAPPER_END)] + "\n"


def wrap_model_submission(spec: ExerciseSpec, source: str | bytes) -> str | bytes:
    """``source`` with the entry wrapper appended when it defines ``spec.kernelbench.model``
    but not ``spec.entry``; otherwise ``source`` unchanged (the precheck judges it)."""
    if spec.kernelbench is None:
        return source
    if isinstance(source, bytes):
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError:
            return source  # the precheck reports it, with the offending offset
    else:
        text = source
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return source  # the precheck reports it (ValueError: NUL bytes)
    if defines(tree, spec.entry) or not defines(tree, spec.kernelbench.model):
        return source
    return text.rstrip() + "\n\n\n" + wrapper_block(spec)
