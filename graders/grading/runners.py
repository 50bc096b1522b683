"""Starting a sandboxed harness session: the one way a grading's sandboxes come to life.

Used by the engine for a grading's own sandboxes and by :mod:`graders.grading.warm` for those
started ahead of time. A session may start without a submission (``text=None``): the harness imports
torch and reserves its input region, and the submission is written into its inbox later,
before the trusted side tells it to ``load``. Either way no student code exists in the
sandbox until then.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from graders.devices.base import Device, InputStage, SandboxMemory, WindowPlan
from graders.grading import arena
from graders.locations import HARNESS_PARENT
from graders.sandbox import launch as sandbox
from graders.sandbox.session import TrustedChannel
from graders.spec.exercise import ExerciseSpec
from graders.spec.layouts import input_layout

GRADER_ROOT = HARNESS_PARENT  # the harness/ folder inside is mounted


def stage_for(spec: ExerciseSpec, dev: Device, peaks: dict[str, Any]) -> InputStage:
    """Room for the largest inputs any phase uses, as many sets as a timed window holds."""
    device = dev.kind
    plan = spec.sizes[device]
    sizes = [*plan.check, plan.timed, *(case.sizes_for(device) for case in spec.check_cases)]
    largest = max(arena.layout_bytes(input_layout(spec, s)) for s in sizes)
    timed = arena.layout_bytes(input_layout(spec, plan.timed))
    # The cost model's bytes less the inputs': what one call writes (at least something).
    written = max(int(spec.cost_bytes(plan.timed)) - timed, 1)
    window = WindowPlan(
        set_bytes=timed,
        output_bytes=written,
        pool_bytes=spec.limits.gpu_memory_mb << 20,
        seconds_per_call=expected_seconds(spec, device, peaks),
        fixed_cost_s=peaks.get("window_s"),
    )
    return dev.new_stage(largest, dev.sets_per_window(window))


def expected_seconds(spec: ExerciseSpec, device: str, peaks: dict[str, Any]) -> float | None:
    """What a call of the timed size takes at the device's peaks (None if they are unknown):
    the longer of its bytes at the peak bandwidth and its FLOPs at the peak FLOP/s."""
    sizes = spec.sizes[device].timed
    if not peaks.get("gbps") or not peaks.get("flops_per_s"):
        return None
    moved, work = float(spec.cost_bytes(sizes)), float(spec.cost_flops(sizes))
    return max(moved / (peaks["gbps"] * 1e9), work / peaks["flops_per_s"])


def memory_bound(spec: ExerciseSpec, device: str, peaks: dict[str, Any]) -> bool:
    """Whether the exercise's timed size lies left of the device's ridge point."""
    sizes = spec.sizes[device].timed
    moved, work = float(spec.cost_bytes(sizes)), float(spec.cost_flops(sizes))
    if not peaks.get("gbps") or not peaks.get("flops_per_s") or moved <= 0:
        return False  # unknown: draw every call afresh, which is always safe
    return work / moved < peaks["flops_per_s"] / (peaks["gbps"] * 1e9)


def gpu_env(device: str, slot: int) -> dict[str, str]:
    """With $GRADERS_GPUS="0,1,..." each slot sees only its own GPU."""
    gpus = [g for g in os.environ.get("GRADERS_GPUS", "").split(",") if g.strip()]
    if device != "cuda" or not gpus:
        return {}
    return {"CUDA_VISIBLE_DEVICES": gpus[slot % len(gpus)].strip()}


def deliver(scratch: sandbox.Scratch, text: str) -> None:
    """Put the code the harness will import into the (read-only to it) inbox."""
    submission = scratch.inbox / "submission.py"
    submission.write_text(text, encoding="utf-8")
    os.chmod(submission, 0o644)


def start_session(
    spec: ExerciseSpec,
    device: str,
    slot: int,
    scratch: sandbox.Scratch,
    text: str | None,
    inputs: InputStage,
    uid: int | None = None,
    warm_profiler: bool = False,
    device_memory: SandboxMemory | None = None,
    command_prefix: tuple[str, ...] = (),
) -> TrustedChannel:
    """Start the harness in a sandbox; ``text`` (if given) is the code it will import.
    ``warm_profiler``: start the profiler before saying hello, for a runner started ahead of
    its submission, whose profile then comes without that wait (CUPTI's start, on a GPU)."""
    if text is not None:
        deliver(scratch, text)
    where = sandbox.layout(scratch.root, GRADER_ROOT)
    results_r, results_w = os.pipe()
    control_r, control_w = os.pipe()
    job = {
        "entry": spec.entry,
        "device": device,
        "submission": f"{where.scratch}/in/submission.py",
        "results_fd": results_w,
        "control_fd": control_r,
        "inputs_bytes": inputs.host_region_bytes(),
        **inputs.job_fields(),
        **(device_memory.job_fields() if device_memory else {}),
        "warm_profiler": warm_profiler,
    }
    job_path = scratch.inbox / "job.json"
    job_path.write_text(json.dumps(job))
    os.chmod(job_path, 0o644)
    command = [
        *command_prefix,  # e.g. Nsight Compute, inside the sandbox with the harness
        sys.executable,
        "-I",
        "-c",
        f"import sys; sys.path.insert(0, {where.grader_root!r}); "
        f"from harness.main import main; main({where.scratch + '/in/job.json'!r})",
    ]
    limits = sandbox.SandboxLimits(
        cpu_s=cpu_limit_s(spec),
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
            env=sandbox.sandbox_env(where.scratch, device, gpu_env(device, slot)),
            pass_fds=(
                results_w,
                control_r,
                *inputs.shared_fds(),
                *(device_memory.fds() if device_memory else ()),
            ),
            uid=uid,
        )
    finally:
        os.close(results_w)  # the child holds its ends; EOF then means the child is gone
        os.close(control_r)
        if device_memory is not None:
            device_memory.started()
    return TrustedChannel(process, results_r, control_w)


def cpu_limit_s(spec: ExerciseSpec) -> int:
    """RLIMIT_CPU of each sandbox process: its whole life, torch's import and a compile of
    its kernels (Triton compiles in the harness's own process) included."""
    return int(spec.limits.setup_s + spec.limits.compile_s + spec.limits.timed_s + 60)
