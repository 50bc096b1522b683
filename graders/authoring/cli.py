"""``python -m graders validate`` and ``python -m graders import-kernelbench``.

Registered by graders/cli.py through :func:`add_subcommands`; each handler returns the
exit code: 0 everything passed, 1 a validation failed (or the grader broke), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from graders.errors import GraderError, SpecError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_subcommands(sub: Any) -> None:
    v = sub.add_parser(
        "validate",
        help="check exercises: schema, reference/naive/samples verdicts, lesson structure",
    )
    v.add_argument("path", nargs="?", type=Path, default=None, help="exercise or folder")
    v.add_argument("--perf", action="store_true", help="full timing: check scores too (slow)")
    v.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    v.add_argument("--jobs", type=int, default=2, help="parallel gradings in quick mode")
    v.add_argument("--no-cache", action="store_true", help="ignore cached results")
    v.add_argument("--json", action="store_true")
    v.set_defaults(run=_run_validate)

    k = sub.add_parser(
        "import-kernelbench", help="turn a KernelBench problem file into a draft exercise"
    )
    k.add_argument("problem", type=Path)
    k.add_argument("exercise_dir", type=Path)
    k.add_argument("--slug", default=None, help="default: the exercise folder's name")
    k.add_argument("--force", action="store_true", help="overwrite an existing folder")
    k.set_defaults(run=_run_import)


def _run_validate(args: argparse.Namespace) -> int:
    from graders.authoring.validate import validate_path
    from graders.spec.exercise import default_root

    path = args.path or default_root()
    if not path.exists():
        print(f"error: {path}: no such file or folder", file=sys.stderr)
        return EXIT_USAGE
    began = time.monotonic()
    try:
        results = validate_path(
            path,
            perf=args.perf,
            device=args.device,
            jobs=args.jobs,
            use_cache=not args.no_cache,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except GraderError as exc:
        print(f"grader error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        from dataclasses import asdict

        print(json.dumps([asdict(r) for r in results], indent=2, default=str))
    for result in results:
        name = result.slug or result.path
        state = "ok" if result.passed else "FAILED"
        extra = " (cached)" if result.cached else f" ({result.seconds:.1f} s)"
        draft = " [draft]" if result.draft else ""
        print(f"{state:6} {name}{draft}{extra}", file=sys.stderr)
        for problem in result.problems:
            print(f"  - {problem}", file=sys.stderr)
    failed = [r for r in results if not r.passed]
    print(
        f"{len(results) - len(failed)}/{len(results)} exercises passed "
        f"({'perf' if args.perf else 'quick'}, {args.device}) in "
        f"{time.monotonic() - began:.1f} s",
        file=sys.stderr,
    )
    return EXIT_FAILED if failed else EXIT_OK


def _run_import(args: argparse.Namespace) -> int:
    from graders.authoring.kernelbench import import_problem

    try:
        folder = import_problem(args.problem, args.exercise_dir, slug=args.slug, force=args.force)
    except (SpecError, FileExistsError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote draft exercise {folder}")
    return EXIT_OK
