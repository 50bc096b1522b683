"""Run the calling thread on one core for a block, then where it ran before."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def on_core(core: int | None) -> Iterator[set[int] | None]:
    """Pin this thread (not its process) to ``core`` for the block.

    Yields the cores it had before, or None where it stayed put: no core given, or not
    allowed on that one (a cpuset without it). Either way the block runs: callers pin for
    speed or cache locality, never for correctness.
    """
    if core is None:
        yield None
        return
    previous = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {core})  # 0: this thread only, on Linux
    except OSError:
        yield None
        return
    try:
        yield previous
    finally:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, previous)
