"""The ladder per exercise over several `validate --perf` runs, for docs/BENCHMARKS.md.

.venv/bin/python -m graders validate exercises --perf --no-cache --json > run1.json
... (as many runs as wanted; the figures are ratios to the reference timed in the same
grading, so runs on a busy machine still count)
.venv/bin/python -m bench.ladder_table run1.json run2.json run3.json

Prints, per exercise, the naive version, the reference and every sample that was timed: the
median over the runs of its figure on the CPU curve's axis (with the range), the points that
today's exercise.toml gives that median, and the rule or score band that rung must keep. A
run made before a curve changed is scored on the new curve, since its figures (ratios) do not
depend on the curve.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from graders import find_exercise
from graders.authoring.ladder_rules import NAIVE_MAX_SHARE, REFERENCE_MIN_SHARE
from graders.authoring.meta import load_expectations


def _load(paths: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """Per exercise slug: the gradings of each run (runs made in other checkouts included)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        for result in json.loads(path.read_text()):
            # Notebooks and exercises that failed before grading have no rungs.
            if result.get("slug") and "reference" in (result.get("gradings") or {}):
                runs.setdefault(result["slug"], []).append(result["gradings"])
    return runs


def _figure(grading: dict[str, Any], measure: str) -> float | None:
    if grading.get("verdict") != "correct":
        return None
    value = grading.get(measure)
    return float(value) if isinstance(value, int | float) else None


def rows(slug: str, runs: list[dict[str, Any]], which: str = "all") -> list[str]:
    spec = find_exercise(slug)  # today's exercise.toml in this checkout
    curve = spec.scoring.curves["cpu"]
    full = spec.scoring.performance_points
    bands = {e.name: e for e in load_expectations(spec.path, spec.max_score)}
    samples = sorted({n for run in runs for n in run if "/" in n})
    names = {
        "all": ["naive", "reference", *samples],
        "companions": ["naive", "reference"],
        "samples": samples,
    }[which]
    lines = []
    for name in names:
        values = [v for run in runs if (v := _figure(run.get(name, {}), curve.measure))]
        if not values:
            continue
        median = statistics.median(values)
        points = curve.points(median, full)
        share = points / full
        band = bands.get(name.removeprefix("samples/"))
        if name == "naive":
            rule, ok = f"<= {NAIVE_MAX_SHARE:.0%}", share <= NAIVE_MAX_SHARE
        elif name == "reference":
            rule, ok = f">= {REFERENCE_MIN_SHARE:.0%}", share >= REFERENCE_MIN_SHARE
        elif band is not None:
            # The score as graded: a sample that ran a forbidden operator is timed, yet earns
            # correctness points only, which its figure alone would not say.
            score = statistics.median(
                float(run[name]["score"]) for run in runs if name in run and run[name]["score"]
            )
            rule = f"score {score:.2f} as graded, band [{band.low:g}, {band.high:g}]"
            ok = band.low <= score <= band.high
        else:
            rule, ok = "-", True
        lines.append(
            f"| {spec.slug} | {name} | {len(values)} | {median:.3f} "
            f"({min(values):.3f}-{max(values):.3f}) | {points:.2f} of {full:g} ({share:.0%}) "
            f"| {rule} | {'ok' if ok else 'FAILS'} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="validate --perf --json outputs")
    parser.add_argument(
        "--rungs",
        choices=("all", "companions", "samples"),
        default="all",
        help="companions: the naive version and the reference only (their files never change)",
    )
    args = parser.parse_args()
    print(
        "| exercise | rung | runs | relative_to_reference: median (range) "
        "| points on today's curve | rule | |"
    )
    print("|---|---|---|---|---|---|---|")
    for slug, runs in sorted(_load(args.runs).items()):
        for line in rows(slug, runs, args.rungs):
            print(line)


if __name__ == "__main__":
    main()
