"""Triton on a CPU worker: when a submission counts as a Triton kernel, and what is checked.

On a CPU worker the sandbox runs Triton kernels under Triton's interpreter
(``TRITON_INTERPRET=1``, graders/harness/triton_interpreter.py), whose timing says nothing
about the kernel, so a Triton submission there earns correctness points only and is not timed.

*Being Triton is launching a kernel.* The harness counts the interpreted kernels launched and
reports the count with every call; a submission is Triton on a CPU only once its import or
its check calls launched one. A ``@triton.jit`` decorator in a file that never launches
anything makes it nothing: it is graded like any Python code, timed phase and spot checks
included (issue 38, class 3). The count comes from the sandbox, so a submission could claim
launches it never made; that claim buys correctness points only, which the checks below still
have to earn, and forgoes every performance point.

*The exercise's own size is checked.* The checks run at the check sizes, which are public;
an interpreted submission then makes one more call, untimed, at the timed size, verified in
full against the reference like a check call (its budget: :func:`budget_s`).
The operator rule applies after it as to any submission (graders/engine.py).
"""

from __future__ import annotations

import secrets
import time

from graders.grading.phases import Grader, Outcome, Run, comparison_fields
from graders.spec.exercise import ExerciseSpec
from graders.spec.layouts import input_layout

# Added to the report's notes of a submission whose kernel ran under @triton.autotune.
AUTOTUNE_NOTE = (
    "Your kernel uses @triton.autotune. Triton's interpreter has no GPU to time the "
    "configurations on, so on this CPU worker it ran the first configuration your autotuner "
    "kept (after your early_config_prune, if any); a GPU worker times them all and runs the "
    "fastest. Every configuration must compute the same result."
)


def observed_language(claimed: str, device: str, run: Run) -> str:
    """The submission's language once its calls were seen: on a CPU, Triton exactly when a
    Triton kernel was launched (``claimed`` is what its syntax tree suggested)."""
    if device != "cpu":
        return claimed
    if run.triton_launches > 0:
        return "triton"
    return "python" if claimed == "triton" else claimed


def check_timed_size(grader: Grader, run: Run) -> None:
    """One untimed call at the exercise's timed size, verified in full; raises the phases'
    Outcome when it is wrong, raises, or outlasts :func:`budget_s`."""
    spec = grader.spec
    sizes = spec.sizes[grader.device].timed
    layout = input_layout(spec, sizes)
    where = f"at the exercise's timed size {sizes}"
    seed = secrets.randbits(63)
    run.deadline = time.monotonic() + budget_s(spec)
    try:
        done, _ = grader.call(run, layout, [seed], flush=False, where=where, budget="timed_s")
    except Outcome as ended:
        if ended.verdict != "timeout":
            raise
        raise Outcome("timeout", _too_slow(spec, sizes)) from None
    result = grader.verify(run, layout, seed, done["outs"][0], where)
    run.correctness["trials"] = int(run.correctness.get("trials", 0)) + 1
    worst = run.correctness.get("max_abs_err")
    if worst is None or (result.max_abs_err or 0) > worst:
        run.correctness.update(comparison_fields(result))


def budget_s(spec: ExerciseSpec) -> float:
    """The timed-size call's budget: the timed phase's and the setup's together. The call
    stands in for the whole timed phase, and the interpreter runs one program instance after
    another in NumPy, hundreds of times slower than a GPU: the Triton tutorial's vector add
    (1024 elements a block) took 2.2 ms a program instance on the 2-core dev box under a load
    of 5, so about 35 s for vector-add's 16 Mi elements, more than ``timed_s`` alone."""
    return spec.limits.timed_s + spec.limits.setup_s


def _too_slow(spec: ExerciseSpec, sizes: dict[str, int]) -> str:
    return (
        f"Your Triton kernel did not finish one call at the exercise's timed size {sizes} "
        f"within {budget_s(spec):g} s under Triton's interpreter, which runs on a CPU worker "
        "one program instance after another. Launch fewer, larger program instances (a "
        "larger BLOCK_SIZE), or look for a loop that never ends, then resubmit."
    )
