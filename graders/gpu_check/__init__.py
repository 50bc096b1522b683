"""``python -m graders gpu-check``: the grading engine's check on a machine with a GPU.

    python -m graders gpu-check [--out DIR] [--device cuda|cpu] [--quick] [--only STEP]...
    python -m graders gpu-check --plan

On a borrowed GPU machine it runs as ``bash scripts/gpu_check.sh --out "$OUT"``, which first
installs the wheels of ``make gpu-wheels`` (Python 3.12 from PATH, no Django, no registry).

1. The containment the machine offers and the one the engine will use (probe.py): cgroup v1/v2,
   the freezer (or the weaker SIGSTOP containment, which the report then states), user
   namespaces, seccomp, bwrap.
2. The steps (steps.py), each in a child process with its own time budget within a total of
   7 minutes (plan.py; ``--plan`` prints it), so a failure or a hang in one is recorded and
   the rest go on: the hardware's questions (where the probe step exists); calibration
   against the datasheet; vector-add's reference (fraction of the calibrated bandwidth, the
   sandbox's memory peak); fidelity against ``triton.testing.do_bench`` (on a CPU,
   ``torch.utils.benchmark``); the CV over gradings of ``samples/fast.py``; every exercise's
   reference, naive version and samples against ``samples/expected.toml`` (the validator);
   the Triton and CUDA C++ samples; ncu's bytes; a warm grading; the hostile corpus.
3. One Markdown table (measure | target | value | pass), the raw JSON and the steps' output
   in ``--out`` (default ``$OUT`` when set, else ``./gpu-check-out``); the table is printed too.

Exit status: 0 when every measure passed (or is informational), 1 when a step failed or a
measure missed its target (or, with ``--plan``, when the plan does not add up), 2 for a usage
error. ``--device cpu`` runs every step with the code a GPU run runs, on each exercise's CUDA
spec at CPU sizes (exercises.py); what only a GPU can answer is a row "needs a GPU", which is
not a failure there, and timing targets are recorded but not judged. CI runs
``--device cpu --quick`` (tests/graders/test_gpu_check_cpu_run.py).

The check keeps its calibration and slot locks in a fresh folder unless ``GRADERS_CACHE_DIR``
is set, so it neither reads nor changes a worker's cache. No Django anywhere.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from graders.gpu_check import plan, probe, results, runner
from graders.gpu_check.steps import STEPS

__all__ = ["add_subcommand", "main"]


def add_subcommand(subparsers: Any) -> None:
    """Add ``gpu-check`` to graders' argparse subparsers (it sets ``run``)."""
    parser = subparsers.add_parser(
        "gpu-check", help="check the engine on a GPU machine: containment, timing, samples"
    )
    configure(parser)
    parser.set_defaults(run=run)


def configure(parser: argparse.ArgumentParser) -> None:
    default_out = os.environ.get("OUT") or "gpu-check-out"
    parser.add_argument(
        "--out", type=Path, default=Path(default_out), help="default: $OUT or ./gpu-check-out"
    )
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--quick", action="store_true", help="small budgets, fewer gradings")
    parser.add_argument(
        "--plan", action="store_true", help="print each step's budget and the total, and exit"
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=[step.name for step in STEPS],
        metavar="STEP",
        help="run only this step (repeatable): " + ", ".join(step.name for step in STEPS),
    )
    parser.add_argument(
        "--budget-factor",
        type=float,
        default=1.0,
        help="multiply every step's budget and the 7-minute total (a slow or shared machine)",
    )


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def _torch_cuda() -> str | None:
    """The CUDA runtime torch was built with (the table is read against it and the driver)."""
    try:
        import torch
    except ImportError:
        return None
    version = torch.version.cuda
    return str(version) if version else None


def _header(device: str, quick: bool, only: list[str] | None) -> tuple[list[str], dict[str, Any]]:
    gpu = None
    try:  # the driver's tool, where the GPU's container has it
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        gpu = done.stdout.strip() or done.stderr.strip()
    except FileNotFoundError:
        gpu = None
    except (OSError, subprocess.TimeoutExpired) as exc:
        gpu = f"nvidia-smi failed: {exc}"
    meta = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "torch": _version("torch"),
        "torch_cuda": _torch_cuda(),
        "triton": _version("triton"),
        "gpu": gpu,
        "cores": len(os.sched_getaffinity(0)),
        "quick": quick,
        "only": only,
        "cache_dir": os.environ.get("GRADERS_CACHE_DIR"),
    }
    lines = [
        f"Measured {meta['measured_at']} with `python -m graders gpu-check --device {device}"
        + (" --quick" if quick else "")
        + "".join(f" --only {name}" for name in only or [])
        + "`.",
        "",
        f"- GPU: {gpu or 'none (no nvidia-smi)'}",
        f"- python {meta['python']} ({sys.executable}), torch {meta['torch']} "
        f"(CUDA runtime {meta['torch_cuda'] or 'none'}), triton {meta['triton']}",
        f"- {meta['cores']} cores; kernel {os.uname().release}",
    ]
    return lines, meta


def print_plan(only: list[str] | None) -> int:
    """The plan of the selected steps (all by default); 1 when it does not add up."""
    selected = [step for step in STEPS if not only or step.name in only]
    print("\n".join(plan.lines(selected)))
    return results.EXIT_FAILED if plan.problems(selected) else results.EXIT_OK


def run(args: argparse.Namespace) -> int:
    if args.plan:
        return print_plan(args.only)
    own_cache = None
    if not os.environ.get("GRADERS_CACHE_DIR"):
        own_cache = tempfile.mkdtemp(prefix="gpu-check-cache-")
        os.environ["GRADERS_CACHE_DIR"] = own_cache
    try:
        return _run(args)
    finally:
        if own_cache is not None:
            shutil.rmtree(own_cache, ignore_errors=True)
            del os.environ["GRADERS_CACHE_DIR"]


def _run(args: argparse.Namespace) -> int:
    header, meta = _header(args.device, args.quick, args.only)
    print("\n".join(header), flush=True)
    print("== containment", flush=True)
    facts = probe.gather()
    probe_lines, probe_rows = probe.describe(facts)
    print("\n".join(f"   {line}" for line in probe_lines), flush=True)
    selected = [step for step in STEPS if not args.only or step.name in args.only]
    log: list[str] = []
    outcomes = runner.run_all(selected, args.device, args.quick, log, factor=args.budget_factor)
    text = results.markdown(header, probe_lines, probe_rows, outcomes, args.device)
    data = results.as_json(meta, facts.as_dict(), probe_rows, outcomes, args.device)
    paths = results.write(args.out, text, data, "\n".join(log))
    print()
    print(text, end="")
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return int(data["exit_code"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m graders gpu-check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    configure(parser)
    return run(parser.parse_args(argv))
