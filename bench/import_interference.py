"""Would a runner importing torch on another core move the figures of a call being timed?

.venv/bin/python -m bench.import_interference [--pairs 6] [--exercise exercises/ch15/vector-add]

Issue 14 lets a new warm runner start while calls are timed only if `bench/` shows that its
start does not move the figures. graders/grading/warm.py freezes a runner still importing while a
grading checks and times calls; importing on the cores no slot times on instead (as the web
server runs) would shorten a rush's wait for runners. This measures what that would cost:
gradings of the exercise's `samples/fast.py` (compare and profile off, as the timed phase
alone) on slot 0, alternating between a quiet machine and one where torch imports run back
to back on the cores apart from the timing core, at nice 19, as such a runner would.
Reported per condition: the median of the gradings' medians and their range, the timed runs
the adaptive rule needed, and the timed phase's wall time.

Never a test: nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SLOT = 0


def importer(cores: set[int]) -> subprocess.Popen[bytes]:
    """torch (and its profiler) imported over and over on ``cores``, at the lowest priority."""
    loop = f"while true; do {sys.executable} -c 'import torch, torch.profiler'; done"
    return subprocess.Popen(
        ["taskset", "-c", ",".join(map(str, sorted(cores))), "nice", "-n", "19", "sh", "-c", loop],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def grade_once(exercise: str, source: str) -> dict[str, Any]:
    import graders

    # The reference is timed alongside: the CPU curves score the ratio to it (issue 26).
    report = graders.grade(exercise, source, device="cpu", slot=SLOT, compare=True, profile=False)
    performance: dict[str, Any] = dict(report.get("performance") or {})
    return {
        "median_s": performance.get("median_s"),
        "runs": performance.get("runs"),
        "timing_s": report["timings"]["timing_s"],
        "verdict": report["verdict"],
        "flags": list(report["flags"]),
    }


def run(pairs: int, exercise: str) -> dict[str, list[dict[str, Any]]]:
    from graders.sandbox.launch import cores_apart_from_timing

    others = cores_apart_from_timing([SLOT])
    if not others:
        raise SystemExit("no core is left apart from the timing core: nothing to measure")
    source = (REPO / exercise / "samples" / "fast.py").read_text()
    results: dict[str, list[dict[str, Any]]] = {"quiet": [], "importing": []}
    for index in range(pairs):
        order = ("quiet", "importing") if index % 2 == 0 else ("importing", "quiet")
        for condition in order:
            loop = importer(others) if condition == "importing" else None
            try:
                if loop is not None:
                    time.sleep(1.0)  # the first import under way
                results[condition].append(grade_once(exercise, source))
            finally:
                if loop is not None:
                    os.killpg(loop.pid, signal.SIGKILL)
                    loop.wait()
    return results


def table(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    rows = [
        "| | quiet | torch importing on the other cores |",
        "|---|---|---|",
    ]

    def cell(condition: str, what: str) -> str:
        got = results[condition]
        medians = [r["median_s"] * 1e3 for r in got if r["median_s"] is not None]
        if what == "median":
            return (
                f"{statistics.median(medians):.2f} ms ({min(medians):.2f}-{max(medians):.2f})"
                if medians
                else "-"
            )
        if what == "runs":
            return ", ".join(str(r["runs"]) for r in got)
        if what == "capped":
            return f"{sum(1 for r in got if r['runs'] == 25)} of {len(got)}"
        if what == "timing":
            return f"{statistics.median(r['timing_s'] for r in got):.2f} s"
        verdicts = sorted({r["verdict"] for r in got})
        flags = sum(len(r["flags"]) for r in got)
        return f"{', '.join(verdicts)}; {flags} flags"

    for label, what in (
        ("gradings' median (range)", "median"),
        ("timed runs per grading", "runs"),
        ("gradings at the 25-run cap", "capped"),
        ("timed phase, median", "timing"),
        ("verdicts; flags", "verdicts"),
    ):
        rows.append(f"| {label} | {cell('quiet', what)} | {cell('importing', what)} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--exercise", default="exercises/ch15/vector-add")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # timed with one thread, as the worker does
    sys.path.insert(0, str(REPO))
    os.chdir(REPO)
    print("\n".join(table(run(args.pairs, args.exercise))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
