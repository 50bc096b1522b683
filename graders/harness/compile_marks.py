"""Mark the threads that run a compiler inside this process, for the trusted side to see.

The import and the check calls have ``setup_s`` of the submission's own time, plus the time a
compiler ran, up to ``compile_s`` (graders/grading/compile_clock.py). Compilers in processes of
their own (g++, ninja, nvcc, ptxas) are seen from outside by their executables. Some compiling
happens in this process: Dynamo's tracing and Inductor's lowering for ``torch.compile`` (with
Inductor's import, seconds of CPU), Triton's JIT on a GPU (its LLVM passes). While one of those
runs, its thread's name (``/proc/<tid>/comm``) reads :data:`MARK`; the trusted side counts a
marked thread's time only while it runs or waits for the core, never while it sleeps.

The name is the student's to set as well: a thread named so by the submission itself buys the
time it spends busy, up to ``compile_s`` in all, and never a point.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import after_import

MARK = "compiling"  # also graders/grading/compile_clock.py's
_inside = threading.local()


def _rename(name: str) -> str | None:
    """Set this thread's name; the name it had, or None when it cannot be set."""
    path = f"/proc/self/task/{threading.get_native_id()}/comm"
    try:
        with open(path, encoding="utf-8") as handle:
            previous = handle.read().strip()
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(name)
    except OSError:
        return None
    return previous


def marked(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, with its thread marked while the outermost marked call runs."""

    @functools.wraps(function)
    def compiling(*args: Any, **kwargs: Any) -> Any:
        if getattr(_inside, "depth", 0):
            return function(*args, **kwargs)
        _inside.depth = 1
        previous = _rename(MARK)
        try:
            return function(*args, **kwargs)
        finally:
            _inside.depth = 0
            if previous is not None:
                _rename(previous)

    return compiling


def _mark_method(owner: Any, name: str) -> None:
    """Mark ``owner.name`` where this version of the library has it."""
    method = getattr(owner, name, None)
    if callable(method):
        setattr(owner, name, marked(method))


def _dynamo(module: ModuleType) -> None:
    # Called on a frame Dynamo has no compiled code for: it traces it and runs the backend
    # (Inductor's import, lowering and C++ build) before the frame runs.
    _mark_method(getattr(module, "ConvertFrameAssert", None), "__call__")


def _triton_jit(module: ModuleType) -> None:
    # A kernel's first launch for a new specialisation: Triton's compile and load.
    _mark_method(getattr(module, "JITFunction", None), "_do_compile")


def install(torch: ModuleType) -> None:
    """Mark torch.compile (it imports Dynamo), Dynamo's frame conversion and Triton's JIT."""
    _mark_method(torch, "compile")
    after_import.when_imported("torch._dynamo.convert_frame", _dynamo)
    after_import.when_imported("triton.runtime.jit", _triton_jit)
