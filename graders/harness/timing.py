"""The harness's in-process timer: a second opinion, never a score.

Every figure that earns points is taken outside the sandbox (graders/grading/phases.py); this timer
only lets the trusted side notice a harness that claims less than it saw. ``_PERF_NS`` is
bound before any student code runs, so patching ``time.perf_counter_ns`` does not reach it.
CUDA calls are timed with events and a synchronize, so asynchronous launches count in full.
The trusted side flushes the caches itself, outside the window (graders/devices/).
"""

from __future__ import annotations

import time

import torch

_PERF_NS = time.perf_counter_ns


class Timer:
    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        if self.cuda:
            self._start = torch.cuda.Event(enable_timing=True)
            self._stop = torch.cuda.Event(enable_timing=True)
        self._t0 = 0

    def start(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()
            self._start.record()
        else:
            self._t0 = _PERF_NS()

    def stop(self) -> int:
        """Nanoseconds since ``start`` (waits for queued GPU work first)."""
        if self.cuda:
            # Synchronize the whole device *before* recording the stop event: work the
            # submission queued on other streams would otherwise finish after it.
            torch.cuda.synchronize()
            self._stop.record()
            self._stop.synchronize()
            return int(self._start.elapsed_time(self._stop) * 1e6)
        return _PERF_NS() - self._t0
