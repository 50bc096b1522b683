"""`validate --perf` over the chapter's exercises, with the figures for docs/BENCHMARKS.md.

.venv/bin/python -m bench.validate_perf [path ...] [--json out.json]

Each exercise's reference, naive version and samples are graded with the exercise's
own timing and with the reference and naive version timed alongside (the real grading
path); the run checks that the reference earns full performance points, the naive
version fewer, and every sample its score range, and prints per exercise the reference
against the naive version: time, bandwidth, FLOP/s, operators and traffic.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from bench import machine
from graders.authoring.validate import validate_path
from graders.measure.calibrate import peaks

ROOT = Path(__file__).resolve().parents[1] / "exercises"


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def table(results: list) -> list[str]:
    lines = [
        "| exercise | measure | ref median | naive median | ref/naive speed | ref GB/s |"
        " ref GFLOP/s | ref points | naive points | ops ref/naive | traffic naive/ideal |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ref, naive = r.gradings.get("reference", {}), r.gradings.get("naive", {})
        fig = r.figures
        speed = (
            naive["median_s"] / ref["median_s"]
            if naive.get("median_s") and ref.get("median_s")
            else None
        )
        traffic = (
            fig["naive_traffic_bytes"] / fig["ideal_bytes"] if fig.get("ideal_bytes") else None
        )
        lines.append(
            f"| {r.slug} | {ref.get('measure') or '-'} | "
            f"{_fmt((ref.get('median_s') or 0) * 1e3)} ms | "
            f"{_fmt((naive.get('median_s') or 0) * 1e3)} ms | {_fmt(speed)}x | "
            f"{_fmt(ref.get('achieved_gbps'))} | {_fmt(ref.get('achieved_gflops'))} | "
            f"{ref.get('points')} | {naive.get('points')} | "
            f"{fig.get('reference_ops', '-')}/{fig.get('naive_ops', '-')} | "
            f"{_fmt(traffic)}x |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    began = time.monotonic()
    results = []
    for path in args.paths:
        results += validate_path(
            path, perf=True, use_cache=False, progress=lambda s: print(s, file=sys.stderr)
        )
    cpu = peaks("cpu")
    print(
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{time.monotonic() - began:.0f} s"
    )
    for key, value in machine.describe().items():
        print(f"- {key}: {value}")
    print(f"- peak: {cpu['gbps']:.1f} GB/s, {cpu['flops_per_s'] / 1e9:.1f} GFLOP/s (1 thread)")
    print()
    print("\n".join(table(results)))
    print()
    for r in results:
        state = "passed" if r.passed else "FAILED"
        print(f"{r.slug}: {state}")
        for problem in r.problems:
            print(f"  - {problem}")
        for name, g in sorted(r.gradings.items()):
            print(
                f"  {name}: {g['verdict']} {g['score']} ({g['measure']}={_fmt(g['measure_value'])})"
            )
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2, default=str))
    sys.exit(0 if all(r.passed for r in results) else 1)


if __name__ == "__main__":
    main()
