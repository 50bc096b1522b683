"""grade_code(): run one code submission through sandbox, checks and timing; build the report.

Reached through :func:`graders.grade`, the engine's one public entry point.

Flow (all checking and all timing happen here, in the trusted process):

1. precheck (size, UTF-8, syntax, entry point) -> ``rejected``;
2. start the harness in the sandbox, which reserves a region for the inputs
   (graders/arena.py); time empty calls before any student code exists (the baseline),
   then let it import the submission; the sandbox stays frozen whenever it is not inside
   a call;
3. correctness: for every check size and declared check case, inputs drawn from a fresh
   secret seed and copied into the frozen sandbox; thaw, go, done, freeze; read the output
   from the frozen sandbox; run the reference on the same inputs, compare, check the
   inputs are unchanged;
4. timing: warmup, then calls with fresh seeds and a cache flush before each, each timed
   from outside less the baseline, until the spread is small or the budget is spent;
   some calls, chosen while the sandbox is frozen after them, are verified like in step 3;
5. figures: roofline, peak fractions, the harness's own clock as a second opinion, score.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import cast

from . import arena, calibrate, flush_size, precheck, report, sandbox, slots
from .errors import GraderError
from .layouts import input_layout
from .model_wrapping import wrap_model_submission
from .phases import Grader, Outcome, Run, comparison_fields
from .report_types import ContainmentKind, Report, Verdict
from .session import TrustedChannel
from .spec import ExerciseSpec

GRADER_ROOT = Path(__file__).resolve().parent  # the harness/ folder inside is mounted


def _start_session(
    spec: ExerciseSpec,
    device: str,
    slot: int,
    scratch: sandbox.Scratch,
    text: str,
    inputs: arena.InputArena,
    uid: int | None = None,
) -> TrustedChannel:
    submission = scratch.inbox / "submission.py"
    submission.write_text(text, encoding="utf-8")
    os.chmod(submission, 0o644)
    where = sandbox.layout(scratch.root, GRADER_ROOT)
    results_r, results_w = os.pipe()
    control_r, control_w = os.pipe()
    job = {
        "entry": spec.entry,
        "device": device,
        "submission": f"{where.scratch}/in/submission.py",
        "results_fd": results_w,
        "control_fd": control_r,
        "inputs_bytes": inputs.nbytes,
    }
    job_path = scratch.inbox / "job.json"
    job_path.write_text(json.dumps(job))
    os.chmod(job_path, 0o644)
    command = [
        sys.executable,
        "-I",
        "-c",
        f"import sys; sys.path.insert(0, {where.grader_root!r}); "
        f"from harness.main import main; main({where.scratch + '/in/job.json'!r})",
    ]
    limits = sandbox.SandboxLimits(
        cpu_s=int(spec.limits.setup_s + spec.limits.timed_s + 60),
        memory_mb=spec.limits.memory_mb,
        fsize_mb=max(spec.limits.output_mb, 64),
    )
    try:
        process = sandbox.start(
            command,
            scratch=scratch.root,
            grader_root=GRADER_ROOT,
            device=device,
            slot=slot,
            limits=limits,
            env=sandbox.sandbox_env(where.scratch, device, _gpu_env(device, slot)),
            pass_fds=(results_w, control_r),
            uid=uid,
        )
    finally:
        os.close(results_w)  # the child holds its ends; EOF then means the child is gone
        os.close(control_r)
    return TrustedChannel(process, results_r, control_w)


def _start_companions(
    stack: contextlib.ExitStack,
    spec: ExerciseSpec,
    device: str,
    slot: int,
    inputs: arena.InputArena,
) -> dict[str, Run]:
    """Sandboxed children running the reference and naive code, for relative figures.

    They get their own scratch dirs and their own uid, so the submission's sandbox can
    neither read their code nor signal them.
    """
    companions: dict[str, Run] = {}
    files = {"reference": spec.reference_path, "naive": spec.naive_path}
    uid = sandbox.companion_uid(slot) if sandbox.mode() == "root" else None
    for name, path in files.items():
        if path is None:
            continue
        scratch = stack.enter_context(sandbox.Scratch(uid))
        session = _start_session(spec, device, slot, scratch, path.read_text(), inputs, uid=uid)
        companions[name] = Run(spec, device, session, scratch)
    return companions


def _require_measure(spec: ExerciseSpec, device: str, timed: report.TimedFigures) -> None:
    curve = spec.scoring.curves.get(device)
    if (
        curve
        and curve.measure in ("relative_to_reference", "speedup_vs_naive")
        and timed.measure(curve.measure) is None
    ):
        raise GraderError(f"the {curve.measure} figure could not be measured (companion failed)")


def _gpu_env(device: str, slot: int) -> dict[str, str]:
    """With $GRADERS_GPUS="0,1,..." each slot sees only its own GPU."""
    gpus = [g for g in os.environ.get("GRADERS_GPUS", "").split(",") if g.strip()]
    if device != "cuda" or not gpus:
        return {}
    return {"CUDA_VISIBLE_DEVICES": gpus[slot % len(gpus)].strip()}


def _arena_for(spec: ExerciseSpec, device: str) -> arena.InputArena:
    """Room for the largest inputs any phase uses."""
    plan = spec.sizes[device]
    sizes = [*plan.check, plan.timed, *(case.sizes_for(device) for case in spec.check_cases)]
    return arena.InputArena(max(arena.layout_bytes(input_layout(spec, s)) for s in sizes))


def grade_code(
    spec: ExerciseSpec,
    source: str | bytes,
    device: str | None = None,
    *,
    slot: int | None = None,
    profile: bool = True,
    compare: bool = True,
) -> Report:
    """Grade ``source`` against ``spec`` on ``device``; see the module docstring.

    ``slot`` selects the sandbox uid and CPU core; None takes a free one (see slots.py)
    and waits when all are busy, so concurrent gradings never share a timing core;
    ``compare`` times reference and naive alongside; ``profile`` adds top operators.
    Raises ValueError for a device the exercise does not support, GraderError when
    the grader itself failed; everything the submission does ends up in the report.
    """
    # A KernelBench-style submission may define only ModelNew; give it the exercise's entry.
    source = wrap_model_submission(spec, source)
    device = device or spec.devices[0]
    if device not in spec.devices:
        raise ValueError(f"exercise {spec.slug} supports {spec.devices}, not {device!r}")
    problem, _ = precheck.find_problem(source, spec.entry, spec.limits.source_bytes)
    if problem:  # answer rejections at once, without waiting for a slot
        builder = report.ReportBuilder(spec, device)
        return builder.finish("rejected", problem, total_s=0.0)
    try:
        with slots.acquire(slot) as held:
            return _grade_in_slot(spec, source, device, slot=held, profile=profile, compare=compare)
    except GraderError:
        raise
    except Exception as exc:  # a bug of ours must not be blamed on the student
        raise GraderError(f"internal error while grading: {exc!r}") from exc


def _grade_in_slot(
    spec: ExerciseSpec,
    source: str | bytes,
    device: str,
    *,
    slot: int,
    profile: bool,
    compare: bool,
) -> Report:
    began = time.monotonic()
    builder = report.ReportBuilder(spec, device)
    problem, text = precheck.find_problem(source, spec.entry, spec.limits.source_bytes)
    if problem:
        return builder.finish("rejected", problem, total_s=time.monotonic() - began)
    try:
        peaks = calibrate.peaks(device, slot=slot)
    except GraderError:
        raise
    except Exception as exc:
        raise GraderError(f"calibration failed: {exc!r}") from exc
    builder.set_peaks(peaks)
    uid = sandbox.slot_uid(slot) if sandbox.mode() == "root" else None
    with contextlib.ExitStack() as stack:
        inputs = _arena_for(spec, device)
        flusher = None
        if device == "cpu":  # device caches are flushed by the harness, inside the window
            flusher = flush_size.CacheFlusher(calibrate.flush_bytes(device, slot=slot), device)
        scratch = stack.enter_context(sandbox.Scratch(uid))
        session = _start_session(spec, device, slot, scratch, text, inputs)
        run = Run(spec, device, session, scratch)
        grader = Grader(spec, device, slot, inputs, flusher)
        ending = _run_phases(stack, grader, run, builder, profile, compare)
        # On CPU the harness only knows "cpu"; the model name is what a reader wants.
        builder.device_name = calibrate.device_name("cpu") if device == "cpu" else run.device_name
        builder.sandbox = {
            "mode": sandbox.mode(),
            "core": sandbox.pick_core(slot),
            "slot": slot,
            "containment": cast(ContainmentKind, run.containment.kind),
        }
        builder.stderr = run.session.process.stderr.text(tail=4000)
        builder.stdout = run.session.process.stdout.text(tail=2000)
    verdict: Verdict = "correct"
    message: str | None = None
    if ending is not None:
        verdict, message = ending.verdict, ending.message
        if ending.comparison is not None:
            run.correctness.update(comparison_fields(ending.comparison))
        builder.traceback = ending.traceback or None
    builder.correctness = run.correctness
    builder.timings = run.timings
    return builder.finish(verdict, message, total_s=time.monotonic() - began)


def _run_phases(
    stack: contextlib.ExitStack,
    grader: Grader,
    run: Run,
    builder: report.ReportBuilder,
    profile: bool,
    compare: bool,
) -> Outcome | None:
    """Start, check, time and profile ``run``; the Outcome that ended it early, if any.

    Every sandbox started here is closed before returning, so their output can be read.
    """
    spec, device, slot = run.spec, run.device, grader.slot
    companions: dict[str, Run] = {}
    try:
        grader.start(run)
        grader.check(run)
        if compare:
            companions = _start_companions(stack, spec, device, slot, grader.arena)
            for name, companion in list(companions.items()):
                try:
                    grader.start(companion)
                except (GraderError, Outcome) as exc:
                    builder.companion_errors[name] = str(exc)
                    del companions[name]
        timed = grader.time_calls(run, companions)
        _require_measure(spec, device, timed)
        builder.profile = grader.profile(run) if profile else None
        builder.set_performance(timed, run.flags)
        return None
    except Outcome as outcome:
        return outcome
    finally:
        run.session.close()
        for companion in companions.values():
            companion.session.close()
