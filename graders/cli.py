"""Command line: ``python -m graders grade|calibrate|list``.

Exit codes: 0 a report was produced (whatever the verdict), 1 the grader itself
failed, 2 usage error (unknown exercise, missing file, bad option).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, NoReturn

from graders.errors import GraderError, SpecError
from graders.report.types import Report
from graders.spec.exercise import (
    ExerciseSpec,
    default_root,
    find_exercise,
    iter_exercises,
    load_exercise,
)

EXIT_OK, EXIT_GRADER, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 already; keep its message
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _resolve(target: str) -> ExerciseSpec:
    path = Path(target)
    if (path / "exercise.toml").is_file():
        return load_exercise(path)
    return find_exercise(target)


def _fmt(value: Any, unit: str = "", scale: float = 1.0, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value * scale:.{digits}g}{unit}"


def human(report: Report) -> str:
    lines = [
        f"{report['exercise']}: {(report['verdict'] or 'grader failure').upper()}  "
        f"score {report['score']:g}/{report['max_score']:g}"
    ]
    if report["message"]:
        lines.append(report["message"])
    c = report.get("correctness")
    if c:
        lines.append(
            f"correctness: {'passed' if c['passed'] else 'failed'} "
            f"({c['trials']} sizes, max abs err {_fmt(c['max_abs_err'])}, "
            f"max rel err {_fmt(c['max_rel_err'])})"
        )
    p = report.get("performance")
    if p:
        lines.append(
            f"time: median {_fmt(p['median_s'], ' ms', 1e3)} "
            f"(IQR {_fmt(p['iqr_s'], ' ms', 1e3)}, CV {_fmt(p['cv'])}, "
            f"{p['runs']} runs)"
        )
        lines.append(
            f"achieved {_fmt(p['achieved_gbps'], ' GB/s')} of peak "
            f"{_fmt(p['peak_gbps'], ' GB/s')} = {_fmt(p['fraction_of_peak'])}; "
            f"AI {_fmt(p['arithmetic_intensity'])} FLOP/B, {p['roof']}-bound, "
            f"{_fmt(p['fraction_of_roofline'])} of roofline"
        )
        if p.get("relative_to_reference") or p.get("speedup_vs_naive"):
            lines.append(
                f"reference/yours: {_fmt(p.get('relative_to_reference'))}x "
                f"(reference {_fmt(p.get('reference_median_s'), ' ms', 1e3)}), "
                f"naive/yours: {_fmt(p.get('speedup_vs_naive'))}x "
                f"(naive {_fmt(p.get('naive_median_s'), ' ms', 1e3)})"
            )
        lines.append(
            f"performance points: {p.get('points')} ({p.get('measure')} = "
            f"{_fmt(p.get('measure_value'))})"
        )
    load = report.get("load")
    if load:
        lines.append(
            f"machine load: {load['action']}" + (" (PROVISIONAL)" if load["provisional"] else "")
        )
        if load.get("explanation"):
            lines.append(str(load["explanation"]))
    if report.get("flags"):
        lines.append("flags: " + ", ".join(report["flags"]))
    for row in report.get("profile") or []:
        lines.append(
            f"  {row['name'][:50]:50} {row['calls']:5d} calls "
            f"{_fmt(row['self_time_s'], ' ms', 1e3)}"
        )
    stderr = report["stderr"]
    if stderr and report["verdict"] != "correct":
        lines.append("--- stderr (tail) ---\n" + stderr[-1500:])
    t = report["timings"]
    lines.append(
        f"took {_fmt(t['total_s'], ' s')} (sandbox start "
        f"{_fmt(t['sandbox_start_s'], ' s')}, timing {_fmt(t['timing_s'], ' s')})"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m graders", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade a submission file")
    g.add_argument("exercise", help="exercise slug or folder")
    g.add_argument("file", type=Path)
    g.add_argument("--device", choices=("cpu", "cuda"))
    g.add_argument("--json", action="store_true")
    g.add_argument("--no-profile", action="store_true")
    c = sub.add_parser("calibrate", help="measure (or show cached) device peaks")
    c.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    c.add_argument("--refresh", action="store_true")
    c.add_argument("--json", action="store_true")
    ls = sub.add_parser("list", help="list exercises")
    ls.add_argument("--root", type=Path, default=None)
    from graders.authoring.cli import add_subcommands  # validate, import-kernelbench

    add_subcommands(sub)
    from graders.notebooks.cli import add_subcommand  # grade-notebook, release-notebook

    add_subcommand(sub)
    from graders.gpu_check import add_subcommand as add_gpu_check  # gpu-check

    add_gpu_check(sub)
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is not None:
        return int(args.run(args))
    if getattr(args, "handler", None) is not None:
        return int(args.handler(args))

    try:
        if args.command == "list":
            for spec in iter_exercises(args.root or default_root()):
                print(f"{spec.chapter}/{spec.slug}\t{spec.title['en']}\t{','.join(spec.devices)}")
            return EXIT_OK
        if args.command == "calibrate":
            from graders.measure.calibrate import peaks

            result = peaks(args.device, refresh=args.refresh)
            print(
                json.dumps(result, indent=2)
                if args.json
                else f"{result['device_name']}: {result['gbps']:.1f} GB/s, "
                f"{result['flops_per_s'] / 1e9:.1f} GFLOP/s ({result['method']})"
            )
            return EXIT_OK
        try:
            spec = _resolve(args.exercise)
        except (SpecError, LookupError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if not args.file.is_file():
            print(f"error: {args.file}: no such file", file=sys.stderr)
            return EXIT_USAGE
        device = args.device or spec.devices[0]
        if device not in spec.devices:
            print(f"error: {spec.slug} supports {', '.join(spec.devices)}", file=sys.stderr)
            return EXIT_USAGE
        from graders import grade

        report = grade(spec, args.file.read_bytes(), device=device, profile=not args.no_profile)
        print(json.dumps(report, indent=2) if args.json else human(report))
        return EXIT_OK
    except GraderError as exc:
        print(f"grader error: {exc}", file=sys.stderr)
        return EXIT_GRADER
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
