"""``grade-notebook`` (and ``release-notebook``) subcommands.

Registered on graders' own CLI with :func:`add_subcommand`; until then
``python -m graders.notebooks grade-notebook SOURCE SUBMISSION [--json]`` works too.
SOURCE is an exercise folder (with notebook.toml) or a bare nbgrader source .ipynb.

Exit codes, as for ``python -m graders grade``: 0 a report was produced (whatever the
verdict), 1 the grader itself failed, 2 usage error (missing file, malformed exercise).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from graders.errors import GraderError, SpecError

if TYPE_CHECKING:
    from graders.report.types import Report

EXIT_OK, EXIT_GRADER, EXIT_USAGE = 0, 1, 2


def add_subcommand(subparsers: Any) -> None:
    """Add ``grade-notebook`` and ``release-notebook`` to an argparse subparsers object.

    Each sets ``handler`` (``args.handler(args) -> exit code``) for the caller to run."""
    grade = subparsers.add_parser("grade-notebook", help="autograde a submitted notebook")
    grade.add_argument("source", type=Path, help="exercise folder or nbgrader source .ipynb")
    grade.add_argument("submission", type=Path, help="the submitted .ipynb")
    grade.add_argument("--json", action="store_true", help="print the JSON report")
    grade.add_argument("--cell-s", type=float, help="time limit per cell (seconds)")
    grade.add_argument("--total-s", type=float, help="time limit for the whole notebook")
    grade.add_argument(
        "--slot", type=int, default=0, help="sandbox slot: picks the uid and core (default 0)"
    )
    grade.set_defaults(handler=run_grade_notebook)
    release = subparsers.add_parser("release-notebook", help="write the student version")
    release.add_argument("source", type=Path, help="exercise folder or nbgrader source .ipynb")
    release.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    release.set_defaults(handler=run_release_notebook)


def _load(source: Path, cell_s: float | None = None, total_s: float | None = None) -> Any:
    from graders.notebooks.spec import load_notebook_exercise, spec_for_source

    spec = load_notebook_exercise(source) if source.is_dir() else spec_for_source(source)
    if cell_s is not None or total_s is not None:
        limits = dataclasses.replace(
            spec.limits,
            cell_s=spec.limits.cell_s if cell_s is None else cell_s,
            total_s=spec.limits.total_s if total_s is None else total_s,
        )
        if limits.cell_s > limits.total_s:
            limits = dataclasses.replace(limits, total_s=limits.cell_s)
        spec = dataclasses.replace(spec, limits=limits)
    return spec


def human(report: Report) -> str:
    lines = [
        f"{report['exercise']}: {(report['verdict'] or 'grader failure').upper()}  "
        f"score {report['score']:g}/{report['max_score']:g}"
        + ("  (needs manual grading)" if report.get("needs_manual_grade") else ""),
        report.get("message") or "",
    ]
    for cell in report.get("cells", []):
        lines.append(
            f"  {cell['grade_id']:24} {cell['kind']:16} {cell['score']:g}/{cell['max_score']:g}"
            + ("  manual" if cell["needs_manual_grade"] else "")
        )
        if output := cell["output"]:
            lines += ["    " + line for line in output.splitlines()[-12:]]
    return "\n".join(line for line in lines if line is not None)


def run_grade_notebook(args: argparse.Namespace) -> int:
    for path in (args.source, args.submission):
        if not path.exists():
            print(f"error: {path}: no such file or folder", file=sys.stderr)
            return EXIT_USAGE
    if not args.submission.is_file():
        print(f"error: {args.submission}: not a file", file=sys.stderr)
        return EXIT_USAGE
    try:
        spec = _load(args.source, args.cell_s, args.total_s)
        from graders.notebooks.grading import grade_notebook

        report = grade_notebook(spec, args.submission.read_bytes(), slot=args.slot)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except GraderError as exc:
        print(f"grader error: {exc}", file=sys.stderr)
        return EXIT_GRADER
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else human(report))
    return EXIT_OK


def run_release_notebook(args: argparse.Namespace) -> int:
    if not args.source.exists():
        print(f"error: {args.source}: no such file or folder", file=sys.stderr)
        return EXIT_USAGE
    try:
        release = _load(args.source).release
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.output:
        args.output.write_bytes(release)
    else:
        sys.stdout.buffer.write(release)
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m graders.notebooks", description=__doc__)
    add_subcommand(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))
