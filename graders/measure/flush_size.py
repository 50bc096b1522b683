"""How much to write between timed calls so each one starts with a cold cache.

Sizing the flush from sysfs over-counts on virtual machines: a KVM guest may report the
host's whole L3 (480 MiB here) while the slice a single core can actually fill is a small
fraction of it. Writing 2 x 480 MiB before every timed call made a vector-add grading take
20 s. So on CPU the size comes from behaviour instead: one thread re-writes working sets of
growing size, and the largest one still clearly faster than the DRAM plateau is the cache
this core really has. CUDA devices report their L2 truthfully, so there the property is used.

The measurement is cached by :mod:`graders.measure.calibrate` with the peaks (measured once per
machine, re-measured with them), so gradings only ever read a number.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import torch

MIB = 1 << 20
CAP_BYTES = 256 * MIB
MIN_BYTES = 8 * MIB
CUDA_MIN_BYTES = 64 * MIB
PROBE_SIZES_MIB = (4, 8, 16, 32, 64, 128, 256)
# "Clearly faster": per-byte time at least this much below the plateau's. Noise between
# repetitions on a quiet core is a few percent; a cache level is 1.5-3x faster.
KNEE_MARGIN = 0.15
REPS = 5
# Small working sets are re-written several times per sample so each sample lasts a few
# milliseconds: long next to the timer's resolution and the loop's overhead.
BYTES_PER_SAMPLE = 32 * MIB

Table = Sequence[tuple[int, float]]


def knee_bytes(table: Table, margin: float = KNEE_MARGIN) -> int:
    """The largest working set still clearly faster per byte than the last (the plateau).

    ``table``: (bytes, seconds for one pass) rows, any order; the largest size is taken as
    the DRAM plateau. 0 when nothing is clearly faster, i.e. no cache worth flushing beyond
    what was probed. The largest fast size wins over a slower smaller one (noise): a larger
    flush only costs time, a smaller one lets a warm cache inflate a grading.
    """
    rows = sorted((size, seconds) for size, seconds in table if size > 0 and seconds > 0)
    if len(rows) < 2:
        return 0
    plateau_size, plateau_s = rows[-1]
    plateau = plateau_s / plateau_size
    fast = [size for size, seconds in rows[:-1] if seconds / size < plateau * (1 - margin)]
    return max(fast, default=0)


def flush_bytes_from_table(
    table: Table, *, minimum: int = MIN_BYTES, cap: int = CAP_BYTES, margin: float = KNEE_MARGIN
) -> int:
    """Twice the effective cache found in ``table``, within [minimum, cap]."""
    return max(minimum, min(cap, 2 * knee_bytes(table, margin)))


def probe_sizes(cap: int = CAP_BYTES) -> list[int]:
    return [mib * MIB for mib in PROBE_SIZES_MIB if mib * MIB <= cap]


def knee_table(
    cap: int = CAP_BYTES,
    reps: int = REPS,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> list[tuple[int, float]]:
    """(bytes, median seconds of one read-modify-write pass) per probed size, one thread.

    One buffer of the largest size is allocated and touched once; each size is a prefix
    of it, written once (untimed) before each sample so it starts as warm as a cache of
    that size allows. Repetitions go round the sizes rather than one size at a time, so a
    burst of traffic from a neighbour slows every size a little, not one size a lot
    (which would fake or hide a knee).
    """
    sizes = probe_sizes(cap)
    if not sizes:
        return []
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # a grading's sandbox runs one thread: so does the probe
    try:
        buffer = torch.zeros(sizes[-1] // 4, dtype=torch.int32)
        samples: dict[int, list[float]] = {size: [] for size in sizes}
        for _ in range(reps):
            for size in sizes:
                view = buffer[: size // 4]
                passes = max(1, BYTES_PER_SAMPLE // size)
                view.add_(1)
                began = clock()
                for _ in range(passes):
                    view.add_(1)  # reads and writes every line: both directions of traffic
                samples[size].append((clock() - began) / passes / 1e9)
        return [(size, statistics.median(samples[size])) for size in sizes]
    finally:
        torch.set_num_threads(previous)


def measure_flush_bytes(device: str = "cpu", cap: int = CAP_BYTES) -> int:
    """Bytes to write before each timed call on ``device`` (see the module docstring).

    CPU: measured (well under 2 s); run it on the core the sandbox will use. CUDA: 2 x L2,
    at least 64 MiB.
    """
    if device.startswith("cuda"):
        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
        return max(CUDA_MIN_BYTES, 2 * l2)
    return flush_bytes_from_table(knee_table(cap), cap=cap)


class CacheFlusher:
    """Writes one buffer of ``nbytes`` so the next call finds none of its data cached.

    Built once per grading and reused: the buffer is allocated and touched here, so a
    flush costs only the writes. Each flush writes a new value, so no layer (a
    compressing memory controller, a lazy zero page) can skip the work. On CPU the writes
    come from the calling thread alone (a NumPy fill, whatever torch's thread setting), so
    the caller pins that thread to the sandbox's core and flushes that core's caches too.
    """

    def __init__(self, nbytes: int, device: str = "cpu") -> None:
        self.nbytes = max(4, int(nbytes))
        self.cuda = device.startswith("cuda")
        self.buffer = torch.empty(self.nbytes // 4, dtype=torch.int32, device=device)
        self._host = None if self.cuda else self.buffer.numpy()
        self._value = 0
        self.flush()  # first touch (page faults) here, not in the first timed flush

    def flush(self) -> None:
        self._value = (self._value + 1) & 0x7FFFFFFF
        if self._host is not None:
            self._host.fill(self._value)
        else:
            self.buffer.fill_(self._value)
            torch.cuda.synchronize()
