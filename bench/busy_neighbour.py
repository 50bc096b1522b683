"""Do performance points hold when a memory-bound neighbour runs on the other core?

.venv/bin/python -m bench.busy_neighbour [--pairs 3] [--exercise exercises/ch15/vector-add]

Issue 26's measure: an honest submission (the exercise's ``samples/fast.py``) graded on slot 0,
alternately on a quiet machine and beside a loop streaming 2 x 128 MiB copies on the other
cores (a second worker, or the web server in a rush, does this to the memory bus), each as
a worker grades (companions timed alongside). Each grading is scored twice from the same run:
by the exercise's own curve, and by the absolute curve vector-add had before (fraction of peak
bandwidth, full at 0.6, zero at 0.1), which a shared bus moves.

Reported: the performance points (of 4) in each condition and their difference, what the
grading saw of the load (the bus canary, the stalls) and did about it, and how many disturbed
gradings were scored without a mark (the target is none).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
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
# The neighbour: copies between two buffers far larger than any cache, one thread per core.
NEIGHBOUR = (
    "import torch; torch.set_num_threads(1); a = torch.ones(1 << 25); b = torch.empty(1 << 25)\n"
    "while True: b.copy_(a); a.copy_(b)"
)


def neighbour(cores: set[int]) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen(
            ["taskset", "-c", str(core), sys.executable, "-c", NEIGHBOUR],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for core in sorted(cores)
    ]


def grade_once(spec: Any, source: str, absolute: Any) -> dict[str, Any]:
    import graders

    report = graders.grade(spec, source, device="cpu", slot=SLOT, compare=True, profile=False)
    assert report["verdict"] == "correct", report["message"]
    perf: dict[str, Any] = dict(report.get("performance") or {})
    load: dict[str, Any] = dict(report.get("load") or {})
    return {
        "points": perf.get("points"),
        "measure": perf.get("measure"),
        "measure_value": perf.get("measure_value"),
        "fraction_of_peak": perf.get("fraction_of_peak"),
        "absolute_points": absolute.points(perf.get("fraction_of_peak"), 4.0),
        "relative_to_reference": perf.get("relative_to_reference"),
        "action": load.get("action"),
        "provisional": bool(load.get("provisional")),
        "bus_canary": load.get("bus_canary"),
        "stalled_kept": load.get("stalled_calls_kept"),
        "total_s": report["timings"]["total_s"],
    }


def run(pairs: int, exercise: str) -> dict[str, list[dict[str, Any]]]:
    from graders import load_exercise
    from graders.sandbox.launch import cores_apart_from_timing
    from graders.spec.exercise import Curve

    others = cores_apart_from_timing([SLOT])
    if not others:
        raise SystemExit("no core is left apart from the timing core: nothing to measure")
    spec = load_exercise(REPO / exercise)
    source = (REPO / exercise / "samples" / "fast.py").read_text()
    absolute = Curve("fraction_of_peak_bandwidth", 0.6, 0.1)
    # The same grading scored by vector-add's former absolute curve, for the provisional path.
    absolute_spec = dataclasses.replace(
        spec,
        scoring=dataclasses.replace(spec.scoring, curves={"cpu": absolute}),
        content_hash=f"{spec.content_hash}-absolute",
    )
    grade_once(spec, source, absolute)  # warm the bench (and calibrate) before measuring
    results: dict[str, list[dict[str, Any]]] = {}
    for index in range(pairs):
        order = ("quiet", "busy") if index % 2 == 0 else ("busy", "quiet")
        for condition in order:
            loops = neighbour(others) if condition == "busy" else []
            try:
                if loops:
                    time.sleep(1.0)  # torch imported, the copies running
                for label, which in (("shipped", spec), ("absolute", absolute_spec)):
                    row = grade_once(which, source, absolute)
                    results.setdefault(f"{label}/{condition}", []).append(row)
            finally:
                for loop in loops:
                    os.killpg(loop.pid, signal.SIGKILL)
                    loop.wait()
    return results


def table(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    def median(rows: list[dict[str, Any]], key: str) -> float:
        values = [float(row[key]) for row in rows if row.get(key) is not None]
        return statistics.median(values) if values else float("nan")

    lines = [
        "| curve | condition | points (of 4), each grading | median | measure | canary (min) "
        "| action | provisional |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, rows in results.items():
        curve, condition = key.split("/")
        points = ", ".join(f"{row['points']:.2f}" for row in rows)
        canary = min(
            (min(row["bus_canary"]) for row in rows if row["bus_canary"]), default=float("nan")
        )
        actions = ", ".join(str(row["action"]) for row in rows)
        marked = sum(row["provisional"] for row in rows)
        lines.append(
            f"| {curve} ({rows[0]['measure']}) | {condition} | {points} | "
            f"{median(rows, 'points'):.2f} | {median(rows, 'measure_value'):.3f} | {canary:.2f} "
            f"| {actions} | {marked}/{len(rows)} |"
        )
    for curve in ("shipped", "absolute"):
        quiet, busy = results.get(f"{curve}/quiet"), results.get(f"{curve}/busy")
        if quiet and busy:
            gap = median(quiet, "points") - median(busy, "points")
            unmarked = sum(1 for row in busy if not row["provisional"] and row["action"] == "none")
            lines.append(
                f"\n{curve}: quiet − busy = {gap:+.2f} points (median); busy gradings scored "
                f"with no action or mark: {unmarked}/{len(busy)}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--exercise", default="exercises/ch15/vector-add")
    parser.add_argument("--json", type=Path, help="also write the raw rows here")
    args = parser.parse_args()
    from bench.machine import describe

    results = run(args.pairs, args.exercise)
    print(json.dumps(describe()))
    print("\n".join(table(results)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
