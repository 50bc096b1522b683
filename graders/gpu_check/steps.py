"""The steps of ``gpu-check``, in order, with their budgets; each runs in a child process of
its own (graders/gpu_check/runner.py).

Every step reuses the engine or the repository's own tools: ``graders.grade``,
``graders.measure.calibrate.peaks``, the validator, the hostile corpus
(``tests/hostile/corpus.py``), ``graders.grading.warm``. What a step is and writes:
graders/gpu_check/context.py; the exercise a step grades on each device:
graders/gpu_check/exercises.py. The budgets add up to the plan's total
(graders/gpu_check/plan.py), the hardware probe's share included.
"""

from __future__ import annotations

from graders.gpu_check.context import Step, StepContext
from graders.gpu_check.hostile_step import hostile
from graders.gpu_check.ncu_step import ncu_bytes
from graders.gpu_check.sample_steps import compiled_samples, samples
from graders.gpu_check.timing_steps import calibration, fidelity, reference, repeatability, warm

__all__ = ["BY_NAME", "STEPS", "Step", "StepContext"]


def probe_step(ctx: StepContext) -> None:
    """The hardware's questions (graders/gpu_check/hardware_probe.py), imported here so the
    probe's module can import the context type without a cycle."""
    from graders.gpu_check import hardware_probe

    hardware_probe.probe(ctx)


# (full, quick) budgets in seconds. Full: a GPU's call 1 (calibration, reference, fidelity,
# at full depth) and the rest sized for one GPU; quick: this project's 2-core CPU machines,
# measured there (docs/BENCHMARKS.md, "GPU"), which a GPU's quick call 2 fits as well.
STEPS: tuple[Step, ...] = (
    Step("probe", "the hardware's questions (GPU)", probe_step, 150, 30),
    Step("calibration", "peaks(device, refresh=True) against the datasheet", calibration, 50, 35),
    Step("reference", "vector-add reference: bandwidth fraction, memory", reference, 30, 45),
    Step("fidelity", "engine median against do_bench (CPU: torch Timer)", fidelity, 45, 45),
    Step("repeatability", "CV over gradings of samples/fast.py", repeatability, 30, 60),
    Step("samples", "every exercise's reference, naive and samples", samples, 30, 60),
    Step("compiled-samples", "Triton and CUDA C++ samples", compiled_samples, 25, 15),
    Step("ncu-bytes", "ncu bytes of one exercise", ncu_bytes, 15, 5),
    Step("warm", "warm grading, submit to report", warm, 15, 35),
    Step("hostile", "the hostile corpus on the device", hostile, 30, 90),
)
BY_NAME = {step.name: step for step in STEPS}
