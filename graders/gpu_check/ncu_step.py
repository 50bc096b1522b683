"""The ``ncu-bytes`` step of ``gpu-check``: the DRAM bytes ncu counts for vector-add's
reference against what its ``[cost]`` says. Only a GPU has the counters: on the CPU the step
writes one ``needs a GPU`` row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graders.gpu_check.context import StepContext
from graders.gpu_check.exercises import exercise, grade, summary
from graders.gpu_check.results import judged

if TYPE_CHECKING:
    from graders.spec.exercise import ExerciseSpec


def bytes_of(result: Any) -> float | None:
    """The DRAM bytes in what hardware_bytes returned: a number, a mapping or an object with
    ``total_bytes`` (the report's HardwareBytes), ``dram_bytes`` or ``bytes``."""
    if isinstance(result, int | float) and not isinstance(result, bool):
        return float(result)
    for key in ("total_bytes", "dram_bytes", "bytes"):
        value = result.get(key) if isinstance(result, dict) else getattr(result, key, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _hardware_bytes(ctx: StepContext, spec: ExerciseSpec) -> tuple[Any, str]:
    """What the engine's ncu path counted for vector-add's reference, and how it was asked:
    ``graders.measure.hardware_bytes.measure(spec, source, device)`` where that exists, else
    the ``hardware_bytes`` of a profiled grading's report. (None, why) when neither has it."""
    try:
        from graders.measure import hardware_bytes
    except ImportError as exc:
        return None, f"graders.measure.hardware_bytes cannot be imported ({exc})"
    reason = getattr(hardware_bytes, "ncu_unavailable_reason", None)
    if callable(reason):
        ctx.raw["ncu_unavailable_reason"] = reason()
    source = spec.reference_path.read_text()
    measure = getattr(hardware_bytes, "measure", None)
    if callable(measure):
        return measure(spec, source, ctx.device), "hardware_bytes.measure()"
    report = grade(spec, source, ctx.device, profile=True)
    ctx.raw["grading"] = summary(report)
    found = report.get("hardware_bytes")
    if found is None:
        why = "neither hardware_bytes.measure() nor a report's hardware_bytes exists yet"
        if ctx.raw.get("ncu_unavailable_reason"):
            why += f"; ncu here: {ctx.raw['ncu_unavailable_reason']}"
        return None, why
    return found, "the report's hardware_bytes (profiled grading)"


def ncu_bytes(ctx: StepContext) -> None:
    measure = "ncu: DRAM bytes of vector-add's reference / [cost] bytes"
    if not ctx.cuda:
        ctx.needs_gpu(measure, "only a GPU has the counters ncu reads")
        return
    spec = exercise("vector-add", ctx.device, ctx.quick)
    result, how = _hardware_bytes(ctx, spec)
    ctx.raw.update(result=result, how=how)
    if result is None:
        ctx.row(measure, "within 10%", f"not available: {how}", "not measured")
        return
    if isinstance(result, dict) and result.get("measured") is False:
        # Where ncu cannot count on this machine at all (gVisor, counters for admins only) the
        # engine's report saying so is right; where ncu works, not counting is a failure.
        ncu_cannot = ctx.raw.get("ncu_unavailable_reason")
        status = "info" if ncu_cannot else "FAIL"
        ctx.row(measure, "within 10%", f"not measured: {result.get('message')}", status)
        return
    measured = bytes_of(result)
    if measured is None:
        ctx.row(measure, "within 10%", f"{how} returned {result!r}"[:300], "info")
        return
    ideal = float(spec.cost_bytes(spec.sizes["cuda"].timed))
    if isinstance(result, dict) and result.get("minimum_bytes"):
        ideal = float(result["minimum_bytes"])  # the minimum for the calls it profiled
    ratio = measured / ideal
    ctx.row(
        measure,
        "within 10%",
        f"{ratio:.3f} ({measured:.4g} of {ideal:.4g} bytes; {how})",
        judged(abs(ratio - 1) <= 0.10),
    )
