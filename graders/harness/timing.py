"""The harness's in-process timer (a second opinion) and the device cache flush.

Every figure that earns points is taken outside the sandbox (graders/grading/phases.py); this timer
only lets the trusted side notice a harness that claims less than it saw. ``_PERF_NS`` is
bound before any student code runs, so patching ``time.perf_counter_ns`` does not reach it.
CUDA calls are timed with events and a synchronize, so asynchronous launches count in full.
On the CPU the trusted side flushes the cache itself (graders/measure/flush_size.py); the harness
flushes only device caches, which cannot be reached from outside.
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


class CacheFlusher:
    """Writes a buffer at least twice the last-level cache so each call starts cold."""

    def __init__(self, device: str, nbytes: int | None) -> None:
        if nbytes is None:
            if device.startswith("cuda"):
                l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
                nbytes = max(2 * int(l2), 64 << 20)
            else:
                nbytes = 64 << 20
        self.nbytes = nbytes
        self._buffer = torch.empty(nbytes // 4, dtype=torch.int32, device=device)
        self._value = 0

    def flush(self) -> None:
        self._value = (self._value + 1) & 0x7FFFFFFF
        self._buffer.fill_(self._value)
        if self._buffer.is_cuda:
            torch.cuda.synchronize()
