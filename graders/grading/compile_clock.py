"""The budget of a submission's import and correctness checks, and the compile time it may add.

The import and every check call share one budget: ``setup_s`` of the submission's own time.
A compiler that runs in the sandbox meanwhile (Inductor's C++ build for ``torch.compile``,
ninja and nvcc for a C++ extension, ptxas for Triton on a GPU) adds the time it ran, up to
``compile_s`` in all: the deadline is ``setup_s + min(compile time, compile_s - setup_s)``
after the import began (issue 38, class 5).

The compile time is read from outside: every ``_POLL_S`` while the sandbox runs, its tasks
are listed with each one's state; the time since the last look is compile time when a task
that compiles was running or waiting for the core. A task compiles when its executable (the
file ``/proc/<tid>/exe`` names) is a compiler's, or when the harness named the thread
``compiling`` while torch.compile's Dynamo and Inductor, or Triton's JIT, run in the Python
process itself (graders/harness/compile_marks.py). A word in the file (a dead
``torch.compile``) buys nothing, nor does a compiler kept idle or a marked thread that sleeps:
a sleeping task is never counted, so what compiling buys is the time it kept a core busy. The
thread's name is the sandbox's to forge, and so is a compiler's run; either buys busy time up
to ``compile_s`` in all, outside every timed window, and no point.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

from graders.harness.compile_marks import MARK

_POLL_S = 0.1  # how often the tasks are looked at while the import or a check call runs
# At most this much is credited for one look: a longer gap since the last one was spent
# frozen, between calls, where nothing compiled.
_LONGEST_STEP_S = 2 * _POLL_S

# Compiler drivers, compilers proper, assemblers, linkers and build tools, by file name.
COMPILERS = frozenset(
    {
        "cc", "c++", "gcc", "g++", "clang", "clang++", "cpp",
        "cc1", "cc1plus", "lto1", "collect2", "lto-wrapper", "as", "ld", "ld.bfd",
        "ld.gold", "ld.lld", "lld", "ninja", "nvcc", "cicc", "ptxas", "nvlink",
        "fatbinary", "cudafe++", "nvdisasm",
    }
)  # fmt: skip
# Debian's names carry a target and a version: x86_64-linux-gnu-g++-12, clang-16.
_DECORATED = re.compile(r"(?:[a-z0-9_]+-linux-gnu-)?(?P<tool>.+?)(?:-\d+(?:\.\d+)*)?")
# States of a task that is running or wants to (runnable, or in uninterruptible I/O).
_BUSY_STATES = frozenset("RD")


def compiler_name(executable: str) -> str | None:
    """The compiler an executable's path names, or None: ``/usr/bin/x86_64-linux-gnu-g++-12``
    is ``g++``; ``/usr/libexec/gcc/x86_64-linux-gnu/12/cc1plus`` is ``cc1plus``."""
    match = _DECORATED.fullmatch(os.path.basename(executable))
    tool = match.group("tool") if match else None
    return tool if tool in COMPILERS else None


def _compiling(tid: int) -> bool:
    """Whether task ``tid`` compiles and is running or waiting for the core: a compiler's
    process, or a thread the harness marked (graders/harness/compile_marks.py). A task that is
    gone, or whose executable cannot be read, is not one."""
    try:
        with open(f"/proc/{tid}/stat", encoding="utf-8", errors="replace") as handle:
            stat = handle.read()
        head, _, tail = stat.rpartition(")")
        if tail.split()[0] not in _BUSY_STATES:
            return False
        if head.partition("(")[2] == MARK:
            return True
        return compiler_name(os.readlink(f"/proc/{tid}/exe")) is not None
    except (OSError, IndexError):
        return False


class CompileClock:
    """The import's and check calls' deadline, moved on by the compile time seen so far."""

    def __init__(
        self,
        tasks: Callable[[], list[int]],
        started: float,
        setup_s: float,
        compile_s: float,
    ) -> None:
        self.tasks = tasks  # the sandbox's tasks, as host ids (Containment.pids)
        self.started, self.setup_s = started, setup_s
        self.extra_s = max(0.0, compile_s - setup_s)  # the most compiling may add
        self.compile_s = self.setup_s + self.extra_s
        self.credited_s = 0.0
        self._last = started
        self.armed: float | None = None  # the deadline it last set (see :meth:`owns`)

    def look(self, now: float | None = None) -> float:
        """Look at the sandbox's tasks; credit the time since the last look when a compiler
        runs now. Returns the deadline."""
        now = time.monotonic() if now is None else now
        step = min(max(now - self._last, 0.0), _LONGEST_STEP_S)
        self._last = now
        if self.credited_s < self.extra_s and any(_compiling(tid) for tid in self._tasks()):
            self.credited_s = min(self.credited_s + step, self.extra_s)
        self.armed = self.deadline()
        return self.armed

    def deadline(self) -> float:
        return self.started + self.setup_s + self.credited_s

    def owns(self, deadline: float) -> bool:
        """Whether ``deadline`` is still the one this clock set: a phase that sets a deadline
        of its own afterwards (the operator rule's call) is not held to this budget."""
        return self.armed is not None and deadline == self.armed

    def wake_at(self, now: float) -> float:
        """When to look again: at the next poll, or at the deadline if that comes first."""
        return min(self.deadline(), now + _POLL_S)

    def _tasks(self) -> list[int]:
        try:
            return self.tasks()
        except OSError:  # the sandbox is ending: whatever runs in it now does not count
            return []
