"""The memory-bus canary: the peak calibration's triad, timed again where gradings run.

A process on the other core that streams memory (a second worker, the web server in a rush)
takes a share of the memory bus: a memory-bound call slows down with no run-queue wait to show
for it. The peak bandwidth was calibrated with ``a = b + 3 c`` over vector-add's timed size,
each call after a cache flush, best of several (graders/measure/calibrate.py); timing that same
triad now, in a sandbox on the grading core, and comparing it with the calibrated figure says
how much of the bus this grading had.

Both the calibration's child and the canary run :func:`triad_best_s`, so the two figures come
from the same code. The canary is asked of a trusted companion only (the reference or naive
version's sandbox): a submission's own process could fake its clock.
"""

from __future__ import annotations

import time
from typing import Any

import torch

# Buffers kept between canaries of one sandbox: allocating 3 x 64 MiB (and touching it) costs
# more than the canary itself.
_kept: dict[str, Any] = {}


def triad_best_s(
    b: torch.Tensor, c: torch.Tensor, out: torch.Tensor, flush: Any, runs: int
) -> float:
    """The best of ``runs`` timings of ``out = b + 3 c``, each after ``flush.flush()``."""
    best = float("inf")
    for _ in range(runs):
        flush.flush()
        began = time.perf_counter_ns()
        torch.add(b, c, alpha=3.0, out=out)
        best = min(best, (time.perf_counter_ns() - began) / 1e9)
    return best


class _Flush:
    """Writes ``nbytes`` with a new value each time, from this thread (on the grading core):
    what graders/measure/flush_size.py's CacheFlusher does on a CPU, kept here because only
    this package is mounted in the sandbox."""

    def __init__(self, nbytes: int) -> None:
        self.buffer = torch.empty(max(1, nbytes // 4), dtype=torch.int32).numpy()
        self.value = 0
        self.flush()  # first touch (page faults) here, not before the first triad

    def flush(self) -> None:
        self.value = (self.value + 1) & 0x7FFFFFFF
        self.buffer.fill(self.value)


def measure(n: int, flush_bytes: int, runs: int) -> float:
    """The canary in a companion's sandbox: the triad over ``n`` float32 elements (one
    thread, as the calibration), best of ``runs``; buffers made on the first call."""
    if _kept.get("shape") != (n, flush_bytes):
        _kept.clear()
        _kept["b"] = torch.full((n,), 1.0)
        _kept["c"] = torch.full((n,), 2.0)
        _kept["out"] = torch.zeros(n)
        _kept["flush"] = _Flush(flush_bytes)
        _kept["shape"] = (n, flush_bytes)
    return triad_best_s(_kept["b"], _kept["c"], _kept["out"], _kept["flush"], runs)
