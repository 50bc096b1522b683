"""Cache flush size: the sysfs-sized flush against the measured one, side by side.

.venv/bin/python -m bench.flush_size

A grading flushes before every timed call, so the flush's size is paid on every call of
the submission and of the reference and naive version timed alongside it. This times one
vector-add timed phase's worth of flushes (warmup + max_runs calls, for the three of
them) at the size the engine derived from sysfs (2 x the largest cache listed, at least
64 MiB) and at the size measured from behaviour, and prints the measured knee table.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from graders.measure import flush_size
from graders.measure.calibrate import TIMED_EXERCISE
from graders.spec.exercise import load_exercise

MIB = 1 << 20
TIMED_PROGRAMS = 3  # the submission, the reference and the naive version


def sysfs_flush_bytes() -> int:
    """The size the engine used before: 2 x the largest cache in sysfs, at least 64 MiB."""
    largest = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1024, "M": MIB, "G": 1 << 30}.get(text[-1:], 1)
        largest = max(largest, int(text.rstrip("KMG")) * scale)
    return max(64 * MIB, 2 * largest)


def _flushes_s(sizes: tuple[int, ...], count: int) -> list[float]:
    """Seconds for ``count`` flushes of each size, alternating between the sizes so
    that a neighbour's burst of traffic slows both rather than one."""
    # Allocation and first touch happen here, untimed, as in a grading.
    flushers = [flush_size.CacheFlusher(nbytes, "cpu") for nbytes in sizes]
    totals = [0] * len(sizes)
    for _ in range(count):
        for i, flusher in enumerate(flushers):
            began = time.perf_counter_ns()
            flusher.flush()
            totals[i] += time.perf_counter_ns() - began
    return [total / 1e9 for total in totals]


def lscpu_head(lines: int = 10) -> str:
    """The machine, as `lscpu | head` shows it (empty where lscpu is missing)."""
    if not shutil.which("lscpu"):
        return ""
    result = subprocess.run(["lscpu"], capture_output=True, text=True, check=False)
    return "\n".join(result.stdout.splitlines()[:lines])


def run() -> dict:
    timing = load_exercise(TIMED_EXERCISE).timing
    count = (timing.warmup + timing.max_runs) * TIMED_PROGRAMS
    began = time.perf_counter()
    table = flush_size.knee_table()
    knee_s = time.perf_counter() - began
    measured = flush_size.flush_bytes_from_table(table)
    old = sysfs_flush_bytes()
    old_s, measured_s = _flushes_s((old, measured), count)
    return {
        "flushes": count,
        "load_average_1m": os.getloadavg()[0],
        "sysfs_bytes": old,
        "sysfs_s": old_s,
        "measured_bytes": measured,
        "measured_s": measured_s,
        "measure_s": knee_s,
        "lscpu": lscpu_head(),
        "knee": [{"mib": size // MIB, "gbps": 2 * size / seconds / 1e9} for size, seconds in table],
    }


def markdown(result: dict) -> list[str]:
    old_s, new_s = result["sysfs_s"], result["measured_s"]
    return [
        "## Cache flush size: sysfs against behaviour",
        "",
        f"One vector-add timed phase's worth of flushes ({result['flushes']}: warmup + "
        "max_runs calls for the submission, the reference and the naive version), the "
        "two sizes alternating, in one run (`python -m bench.flush_size`; 1-minute load average "
        f"{result['load_average_1m']:.1f}):",
        "",
        "| flush size | from | time for the phase's flushes | per flush |",
        "|---|---|---|---|",
        f"| {result['sysfs_bytes'] / MIB:.0f} MiB | sysfs (2 x largest cache listed) | "
        f"{old_s:.2f} s | {old_s / result['flushes'] * 1e3:.1f} ms |",
        f"| {result['measured_bytes'] / MIB:.0f} MiB "
        "| measured knee (graders.measure.flush_size) | "
        f"{new_s:.2f} s | {new_s / result['flushes'] * 1e3:.1f} ms |",
        "",
        f"Knee table (one thread, in-place `add_` over a buffer of each size, median of "
        f"{flush_size.REPS}; read + write bytes counted; the measurement took "
        f"{result['measure_s']:.2f} s):",
        "",
        "| working set | GB/s |",
        "|---|---|",
        *(f"| {row['mib']} MiB | {row['gbps']:.1f} |" for row in result["knee"]),
        "",
        "Machine (`lscpu | head`):",
        "",
        "```",
        result["lscpu"],
        "```",
        "",
    ]


def main() -> None:
    result = run()
    print("\n".join(markdown(result)))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
