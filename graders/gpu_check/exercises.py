"""The exercise a step grades, as the device it runs on needs it, and the grading call.

On a GPU a step grades the exercise as it is. On the CPU it grades the exercise's CUDA spec
scaled to the CPU: the CUDA curve (its measure, so the same companions are timed and the
same comparison is made) with the CPU's sizes (a GPU's gigabytes would neither fit nor
finish), so that every step runs the code a GPU run runs, except the device's own calls (a
CPU window holds one call where a GPU's holds several). A quick CPU run also takes a short
timing policy, close to the hostile corpus's: its timing figures are recorded, not judged, on
a CPU, and a timed phase that runs to its 30 s limit on a busy 2-core machine (each round
times the reference and the naive version beside the submission) would not let the quick run
fit its 7 minutes.

The compare setting is never a step's choice: an exercise whose curve on the device is
relative to its reference (or naive version) is graded with its companions, as a worker
grades it; without them the engine refuses to score (engine._require_measure).
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graders.report.types import Report
    from graders.spec.exercise import ExerciseSpec

RELATIVE = ("relative_to_reference", "speedup_vs_naive")
# The hostile corpus's quick timing (tests/hostile/corpus.py): enough runs for a median.
QUICK_CPU_TIMING = {"warmup": 1, "min_runs": 5, "max_runs": 8}
QUICK_CPU_TIMED_S = 4.0  # the timed phase stops here, with the rounds it has
QUICK_CPU_SHRINK = 4  # the largest timed size over this: vector-add's 3 x 16 MiB, past the LLC


def needs_compare(spec: ExerciseSpec, device: str) -> bool:
    """Whether ``device``'s curve scores against the companions (read as the engine reads it)."""
    curve = spec.scoring.curves.get(device)
    return bool(curve and curve.measure in RELATIVE)


def for_device(spec: ExerciseSpec, device: str, quick: bool) -> ExerciseSpec:
    """``spec`` on a GPU; on the CPU, its CUDA curve at the CPU's sizes (see the module)."""
    if device != "cpu":
        return spec
    curves = dict(spec.scoring.curves)
    if "cuda" in curves:
        curves["cpu"] = curves["cuda"]
    timing = replace(spec.timing, **QUICK_CPU_TIMING) if quick else spec.timing
    limits = replace(spec.limits, timed_s=QUICK_CPU_TIMED_S) if quick else spec.limits
    sizes = dict(spec.sizes)
    if quick and "cpu" in sizes:
        timed = dict(sizes["cpu"].timed)
        largest = max(timed, key=lambda name: timed[name])
        timed[largest] = max(1, timed[largest] // QUICK_CPU_SHRINK)
        sizes["cpu"] = replace(sizes["cpu"], timed=timed)
    return replace(
        spec,
        sizes=sizes,
        scoring=replace(spec.scoring, curves=curves),
        timing=timing,
        limits=limits,
        # Reports carry the hash: this is not the published exercise.
        content_hash=f"{spec.content_hash}+cuda-spec-on-cpu",
    )


def exercise(slug: str, device: str, quick: bool) -> ExerciseSpec:
    from graders.spec.exercise import find_exercise

    return for_device(find_exercise(slug), device, quick)


def grade(
    spec: ExerciseSpec,
    source: str,
    device: str,
    *,
    compare: bool | None = None,
    profile: bool = False,
    **options: Any,
) -> Report:
    """``graders.grade`` with the companions the curve needs. ``compare=True`` times them
    even where the curve does not need them (a worker always does); ``False`` where the curve
    needs them is a mistake of the step's, refused here with a message that says so."""
    from graders import grade as engine_grade

    needed = needs_compare(spec, device)
    if compare is False and needed:
        raise ValueError(
            f"{spec.slug}'s {device} curve is {spec.scoring.curves[device].measure}: it must "
            "be graded with compare on (the engine cannot score it without the companions)"
        )
    return engine_grade(
        spec, source, device=device, compare=needed or bool(compare), profile=profile, **options
    )


def perf(report: Report) -> dict[str, Any]:
    return dict(report.get("performance") or {})


def cv(values: list[float]) -> float | None:
    return statistics.pstdev(values) / statistics.fmean(values) if len(values) > 1 else None


def summary(report: Report) -> dict[str, Any]:
    """What the JSON keeps of a report."""
    figures = perf(report)
    return {
        "verdict": report["verdict"],
        "score": report["score"],
        "message": report.get("message"),
        "flags": list(report.get("flags") or []),
        **{
            key: figures.get(key)
            for key in (
                "median_s",
                "achieved_gbps",
                "fraction_of_peak",
                "peak_gbps",
                "cv",
                "runs",
                "points",
                "calls_per_window",
                "empty_window_s",
                "empty_window_spread_s",
            )
        },
        "timings": dict(report.get("timings") or {}),
        "sandbox": (report.get("device") or {}).get("sandbox"),
    }
