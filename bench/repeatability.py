"""Repeatability: how much does the achieved bandwidth vary between gradings?

Grades the same submission N times (each a fresh sandbox, fresh inputs) and reports
the coefficient of variation of the achieved GB/s and the spread of the points given.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from graders import grade, load_exercise
from graders.measure.load import RELATIVE_MEASURES

REPO = Path(__file__).resolve().parents[1]
VECTOR_ADD = REPO / "exercises" / "ch15" / "vector-add"


def run(count: int = 10, device: str = "cpu", compare: bool | None = None) -> dict[str, Any]:
    """``compare`` None: time the reference alongside where the device's curve needs it."""
    spec = load_exercise(VECTOR_ADD)
    if compare is None:
        curve = spec.scoring.curves.get(device)
        compare = bool(curve and curve.measure in RELATIVE_MEASURES)
    source = (VECTOR_ADD / "samples" / "fast.py").read_text()
    gbps: list[float] = []
    points: list[float] = []
    seconds: list[float] = []
    runs: list[int] = []
    disturbed: list[int] = []
    for _ in range(count):
        report = grade(spec, source, device=device, compare=compare, profile=False)
        perf, total_s = report["performance"], report["timings"]["total_s"]
        assert report["verdict"] == "correct", report["message"]
        # A correct grading was timed: it has its performance, bandwidth and duration.
        assert perf is not None and perf["achieved_gbps"] is not None and total_s is not None
        gbps.append(perf["achieved_gbps"])
        points.append(perf["points"])
        seconds.append(total_s)
        runs.append(perf["runs"])
        disturbed.append(perf.get("disturbed_runs") or 0)
    mean = statistics.fmean(gbps)
    return {
        "device": device,
        "gradings": count,
        "achieved_gbps": gbps,
        "mean_gbps": mean,
        "cv": statistics.pstdev(gbps) / mean,
        "min_gbps": min(gbps),
        "max_gbps": max(gbps),
        "points": points,
        "mean_grading_s": statistics.fmean(seconds),
        "mean_runs": statistics.fmean(runs),
        "disturbed_runs": disturbed,
    }


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 10), indent=2))
