"""How often does honest code go provisional, or get calls timed again, on a quiet machine?

.venv/bin/python -m bench.provisional_rate [--gradings 50] [--exercise exercises/ch15/vector-add]

Issue 38, class 4: a provisional grading buys four automatic regrades and a "Pending" in the
LMS, so it must come from a machine that really was busy, never from honest code on a quiet
one (the target is 0 in 50). Honest submissions (the exercise's ``samples/fast.py`` and its
``reference.py``, taken in turn) are graded ``--gradings`` times on slot 0 as a worker grades
them: warm runners, the companions timed alongside. For each grading the bench keeps what the
report's ``load`` block says: the action, whether it was provisional, the calls timed again
and kept, what was detected; and the load average before and after the run, since another
process on the machine is the one thing that should make a grading provisional.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SLOT = 0
HONEST = ("samples/fast.py", "reference.py")


def loadavg() -> str:
    with open("/proc/loadavg") as handle:
        return " ".join(handle.read().split()[:3])


def grade_once(spec: Any, source: str, name: str) -> dict[str, Any]:
    import graders

    report = graders.grade(spec, source, device="cpu", slot=SLOT, compare=True, profile=False)
    if report["verdict"] != "correct":
        raise SystemExit(f"{name} was graded {report['verdict']}: {report['message']}")
    load: dict[str, Any] = dict(report.get("load") or {})
    perf: dict[str, Any] = dict(report.get("performance") or {})
    return {
        "submission": name,
        "points": perf.get("points"),
        "action": load.get("action"),
        "provisional": bool(load.get("provisional")),
        "measured_twice": bool(load.get("measured_twice")),
        "retaken": int(load.get("stalled_calls_retaken") or 0),
        "kept": int(load.get("stalled_calls_kept") or 0),
        "detected": list(load.get("detected") or []),
        "total_s": report["timings"]["total_s"],
    }


def run(gradings: int, exercise: str) -> dict[str, Any]:
    from graders import load_exercise
    from graders.grading import warm

    folder = REPO / exercise
    spec = load_exercise(folder)
    sources = [(name, (folder / name).read_text()) for name in HONEST]
    os.environ["GRADERS_WARM"] = "1"  # as the worker grades
    rows: list[dict[str, Any]] = []
    try:
        grade_once(spec, sources[0][1], sources[0][0])  # calibrate, start the companions
        before = loadavg()
        for index in range(gradings):
            name, source = sources[index % len(sources)]
            rows.append(grade_once(spec, source, name))
            row = rows[-1]
            # One line a grading as it ends, so that a run cut short still says what it saw.
            print(
                f"{index + 1}/{gradings} {name}: {row['action']}, retaken {row['retaken']}, "
                f"kept {row['kept']}, provisional {row['provisional']}",
                flush=True,
            )
        after = loadavg()
    finally:
        warm.close_all()
    return {"exercise": exercise, "loadavg_before": before, "loadavg_after": after, "rows": rows}


def summary(result: dict[str, Any]) -> list[str]:
    rows = result["rows"]
    retaken = [row["retaken"] for row in rows]
    actions = Counter(str(row["action"]) for row in rows)
    # Counted by kind: the figures in each sentence (how many calls) are left out.
    detected = Counter(
        re.sub(r"\d+", "N", seen.split(":")[0]) for row in rows for seen in row["detected"]
    )
    provisional = sum(row["provisional"] for row in rows)
    return [
        f"exercise: {result['exercise']}; load average before {result['loadavg_before']}, "
        f"after {result['loadavg_after']}",
        f"gradings: {len(rows)}; provisional: {provisional}; measured twice: "
        f"{sum(row['measured_twice'] for row in rows)}",
        f"calls timed again per grading: median {statistics.median(retaken):g}, "
        f"max {max(retaken)}, total {sum(retaken)}; kept anyway: "
        f"{sum(row['kept'] for row in rows)}",
        f"actions: {dict(actions)}",
        f"detected: {dict(detected) or 'nothing'}",
        f"wall time per grading: median {statistics.median(r['total_s'] for r in rows):.1f} s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gradings", type=int, default=50)
    parser.add_argument("--exercise", default="exercises/ch15/vector-add")
    parser.add_argument("--json", type=Path, help="also write the raw rows here")
    args = parser.parse_args()
    if args.gradings < 1:
        parser.error("--gradings must be at least 1")
    from bench.machine import describe

    result = run(args.gradings, args.exercise)
    print(json.dumps(describe()))
    print("\n".join(summary(result)))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
