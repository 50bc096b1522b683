"""Grading slots: one per concurrently usable core, each with its own uid and core.

Two gradings timed on the same core would distort each other's figures, so a grading
holds an exclusive lock on its slot for its whole duration. ``slot=None`` takes the
first free slot (or waits for one); the number of slots is ``$GRADERS_SLOTS``, by
default one less than the usable cores (one core stays free for the trusted side
and the OS), at least one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from graders.locations import cache_dir


def slot_count() -> int:
    explicit = os.environ.get("GRADERS_SLOTS")
    if explicit:
        return max(1, int(explicit))
    return max(1, len(os.sched_getaffinity(0)) - 1)


def _lock_dir() -> Path:

    path = cache_dir() / "slots"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def acquire(slot: int | None = None) -> Iterator[int]:
    """Hold a slot exclusively (across processes) for the duration of the block."""
    directory = _lock_dir()
    handles = []
    try:
        if slot is None:
            count = slot_count()
            for candidate in range(count):
                path = directory / f"slot-{candidate}.lock"
                handle = open(path, "a+")  # noqa: SIM115  (stays open while the slot is held)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.close()
                    continue
                handles.append(handle)
                slot = candidate
                break
            else:
                slot = os.getpid() % count  # all busy: queue behind one of them
        if not handles:
            path = directory / f"slot-{slot}.lock"
            handle = open(path, "a+")  # noqa: SIM115  (stays open while the slot is held)
            handles.append(handle)
            fcntl.flock(handle, fcntl.LOCK_EX)  # waits while another grading holds it
        yield slot
    finally:
        for handle in handles:
            handle.close()  # closing releases the lock


@contextlib.contextmanager
def attempt(slot: int) -> Iterator[bool]:
    """Hold ``slot`` for the block if it is free now (True), else do nothing (False).

    Warm runners (graders/grading/warm.py) start and measure only in this: never while a grading,
    in this process or another, holds the slot.
    """
    handle = open(_lock_dir() / f"slot-{slot}.lock", "a+")  # noqa: SIM115  (closed below)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        handle.close()  # closing releases the lock
