"""The steps of ``gpu-check`` that check verdicts: every exercise's samples through the
validator, and the compiled samples (Triton, CUDA C++).

On a GPU one grading runs at a time: lanes that each take a slot would each hold a pool of
GPU memory and calibrate at once, which overflowed an 80 GB card. On the CPU the Triton
samples run under Triton's interpreter (their verdicts are checked; a CPU worker gives no
points for their timing), and the CUDA C++ sample is graded as a CPU worker grades it
(rejected); building it with nvcc is a row that needs a GPU.
"""

from __future__ import annotations

import contextlib
import time
import tomllib
from pathlib import Path
from typing import Any

from graders.gpu_check.context import StepContext
from graders.gpu_check.exercises import exercise, grade, summary
from graders.gpu_check.results import judged

COMPILED_SAMPLES = (
    ("vector-add", "triton_kernel"),
    ("vector-add", "cuda_inline"),
    ("gelu-residual", "triton_fused"),
)
CUDA_ONLY_SAMPLES = {"cuda_inline"}  # built by nvcc: a CPU worker rejects them


def lanes(device: str) -> int:
    """Gradings at once: one on a GPU (see the module), else one per free slot, up to 4."""
    if device.startswith("cuda"):
        return 1
    from graders.sandbox.slots import slot_count

    return max(1, min(4, slot_count()))


# ---------------------------------------------------------------------------- samples


def agreement(
    expectations: list[Any], gradings: dict[str, dict[str, Any]], device: str = "cpu"
) -> tuple[list[str], list[str]]:
    """(agreed, disagreed) sample names, judged as the validator's quick mode judges them:
    the verdict, and the score range unless the verdict is 'correct' (untimed in quick mode),
    against the sample's table for this device kind where expected.toml has one."""
    agreed: list[str] = []
    disagreed: list[str] = []
    kind = "cuda" if device.startswith("cuda") else "cpu"
    for expected in expectations:
        for_device = getattr(expected, "for_device", None)
        want = for_device(kind) if callable(for_device) else expected
        got = gradings.get(f"samples/{want.name}")
        if got is None:
            disagreed.append(f"{want.name} (not graded)")
            continue
        ok = got["verdict"] == want.verdict and (
            want.verdict == "correct" or want.low <= got["score"] <= want.high
        )
        (agreed if ok else disagreed).append(
            want.name if ok else f"{want.name} ({got['verdict']}, expected {want.verdict})"
        )
    return agreed, disagreed


def samples(ctx: StepContext) -> None:
    from graders.authoring.meta import load_expectations
    from graders.authoring.validate import exercise_folders, validate_exercise
    from graders.errors import SpecError
    from graders.spec.exercise import default_root, load_exercise

    folders = exercise_folders(default_root())
    if ctx.quick:  # the quick run checks one exercise's samples end to end
        folders = [f for f in folders if f.name == "vector-add"]
    jobs = lanes(ctx.device)
    ctx.raw["jobs"] = jobs
    ctx.raw["exercises"] = {}
    for folder in folders:
        name = folder.name
        try:
            spec = load_exercise(folder)
        except SpecError as exc:
            ctx.row(f"samples: {name}", "as expected.toml says", f"spec error: {exc}", "FAIL")
            continue
        if ctx.device not in spec.devices:
            ctx.row(f"samples: {name}", "-", f"{ctx.device} not in devices", "info")
            continue
        try:
            result = validate_exercise(folder, device=ctx.device, jobs=jobs, use_cache=False)
        except Exception as exc:  # the grader broke: record it, go on with the next exercise
            ctx.raw["exercises"][name] = {"error": repr(exc)}
            ctx.row(
                f"samples: {name}", "as expected.toml says", f"grader failed: {exc}"[:400], "FAIL"
            )
            continue
        try:
            expectations = load_expectations(folder, spec.max_score)
        except SpecError:
            expectations = []  # the validator reports the same problem
        agreed, disagreed = agreement(expectations, result.gradings, ctx.device)
        ctx.raw["exercises"][name] = {
            "problems": result.problems,
            "agreed": agreed,
            "disagreed": disagreed,
            "gradings": result.gradings,
            "seconds": result.seconds,
        }
        ctx.raw["progress"] = f"{len(ctx.raw['exercises'])} of {len(folders)} exercises validated"
        if not result.gradings and result.problems:  # stopped before grading anything
            value = "not graded: " + "; ".join(result.problems)[:400]
        else:
            others = [p for p in result.problems if "expected.toml" not in p]
            value = f"{len(agreed)}/{len(expectations)} samples agreed"
            if disagreed:
                value += "; disagreed: " + ", ".join(disagreed)
            if others:
                value += "; " + "; ".join(others)[:400]
        ctx.row(
            f"samples: {name} (reference, naive, samples on {ctx.device})",
            "every verdict as samples/expected.toml",
            value,
            judged(result.passed),
        )


# ---------------------------------------------------------------------------- compiled samples


def expected_verdict(folder: Path, name: str, device: str) -> str:
    """The sample's verdict in expected.toml: its [name.cuda] table's on a GPU where it has
    one, else its own; "correct" where the file has no entry for it."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    with contextlib.suppress(OSError, tomllib.TOMLDecodeError):
        entry = tomllib.loads((folder / "samples" / "expected.toml").read_text()).get(name)
        for table in (entry.get(kind) if isinstance(entry, dict) else None, entry):
            if isinstance(table, dict) and isinstance(table.get("verdict"), str):
                return str(table["verdict"])
    return "correct"


def compiled_samples(ctx: StepContext) -> None:
    for slug, name in COMPILED_SAMPLES:
        measure = f"{slug} samples/{name}.py on {ctx.device}"
        spec = exercise(slug, ctx.device, ctx.quick)
        path = spec.path / "samples" / f"{name}.py"
        want = expected_verdict(spec.path, name, ctx.device)
        if not path.is_file():
            ctx.row(measure, want, "missing: the sample file is not there", "FAIL")
            continue
        began = time.monotonic()
        try:
            report = grade(spec, path.read_text(), ctx.device)
        except Exception as exc:  # one sample's grader failure must not hide the others
            ctx.raw[name] = {"error": repr(exc)}
            ctx.row(measure, want, f"grader failed: {exc}"[:400], "FAIL")
            continue
        ctx.raw[name] = summary(report)
        seconds = time.monotonic() - began
        message = (
            f": {report['message']}" if report["verdict"] != want and report["message"] else ""
        )
        ctx.row(
            measure,
            want,
            f"{report['verdict']} {report['score']:g}/{report['max_score']:g} in {seconds:.1f} s"
            f"{message}"[:400],
            judged(report["verdict"] == want),
        )
        if name in CUDA_ONLY_SAMPLES and not ctx.cuda:
            ctx.needs_gpu(f"{slug} samples/{name}.py built by nvcc and graded correct")
