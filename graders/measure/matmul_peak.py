"""The CPU's fp32 matmul peak, as a grading's timed calls of the matmul exercise would see it.

Run in the calibration's child (graders/measure/calibrate.py: pinned to the grading core, one
thread, the sandbox's environment with huge pages for large tensors), after the triad. It
times ``torch.mm`` at the matmul exercise's CPU timed size, each call after the same cache
flush a grading writes, best of ``RUNS``.

Each call counts its time *on the core*: the process's CPU time over the call. A grading times
again any call that waited for its core (the stall rule, graders/grading/phases.py), so the
calls it keeps had the core throughout; a peak read from wall times instead counted every wait
for the core as the matmul's own. On the shared 2-core dev box that read 43-45 GFLOP/s while
the core was contended and 91 when it was not, and a KernelBench matmul graded in a quiet
moment read 125 % of such a peak (issue 38, class 6). Time on the core can still read low
(another core's traffic in the shared cache, a lower clock: 78-85 GFLOP/s on that box under
load), never high, so the peak a grading uses is the highest recent one
(calibrate.py's ``_flops_peak``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from graders.locations import REPO_ROOT

MATMUL_EXERCISE = REPO_ROOT / "exercises" / "ch15" / "matmul"
FALLBACK_SHAPE = (1024, 1024, 1024)  # (m, k, n) when the exercise cannot be read
RUNS = 7
# The measurement's mark in the history: figures timed this way, not by wall time.
TIMER = "time_on_core"


def timed_shape() -> tuple[int, int, int]:
    """(m, k, n) of the matmul exercise's CPU timed size."""
    with contextlib.suppress(Exception):
        from graders.spec.exercise import load_exercise

        sizes = load_exercise(MATMUL_EXERCISE).sizes["cpu"].timed
        return int(sizes["m"]), int(sizes["k"]), int(sizes["n"])
    return FALLBACK_SHAPE


def time_on_core_s(fn: Callable[[], object]) -> float:
    """Seconds of CPU time ``fn`` took, all the process's threads together: the time it had a
    core, whatever it waited for one. (Threads on several cores, where the child is not
    pinned, add up to the one core's worth of work, not less.)"""
    began = time.process_time_ns()
    fn()
    return (time.process_time_ns() - began) / 1e9


def best_time_on_core_s(fn: Callable[[], object], flusher: Any, runs: int) -> float:
    """The least :func:`time_on_core_s` of ``runs`` calls, each after ``flusher.flush()``."""
    best = float("inf")
    for _ in range(runs):
        flusher.flush()
        best = min(best, time_on_core_s(fn))
    return best


def measure(flusher: Any, shape: tuple[int, int, int]) -> dict[str, Any]:
    """{"flops_per_s", "flops_timer", "matmul_method"}: fp32 ``torch.mm`` at ``shape``."""
    import torch

    m, k, n = shape
    a, b = torch.randn(m, k), torch.randn(k, n)
    out = torch.empty(m, n)
    seconds = best_time_on_core_s(lambda: torch.mm(a, b, out=out), flusher, RUNS)
    return {
        "flops_per_s": 2 * m * k * n / seconds,
        "flops_timer": TIMER,
        "matmul_method": f"fp32 torch.mm {m}x{k}x{n} (the matmul exercise's timed size), best "
        f"of {RUNS} by time on the core (CPU time: a wait for the core is not the matmul's)",
    }
