"""The ladder of a report: the naive version, the reference and the submission on one axis.

Built from the report's own figures only, so a student sees where they stand with numbers
measured in their own grading: the reference and the naive version were timed in the same
rounds as the submission (``performance.reference_median_s``, ``naive_median_s``), and each
rung's figure is on the axis the exercise's scoring curve reads (``measure``), with the points
that curve gives it.

On an anchored axis the companions' figures follow from their times alone
(``relative_to_reference``: the reference is 1 and the naive version ``t_ref / t_naive``;
``speedup_vs_naive``: the naive version is 1). On an absolute axis (a fraction of a peak or of
the roofline) the three did the same work, so each figure scales with the inverse of its time:
``value x t_submission / t_companion``. A rung that was not timed (no companions, or one that
failed) is left out rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graders.report.types import Ladder, LadderRung, LadderRungName
from graders.spec.exercise import Curve

RUNG_ORDER: tuple[LadderRungName, ...] = ("naive", "reference", "submission")


def _positive(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def companion_values(performance: Mapping[str, Any], measure: str) -> dict[str, float]:
    """The naive version's and the reference's figures on ``measure``, where they were timed."""
    own = _positive(performance.get("median_s"))
    times = {
        "reference": _positive(performance.get("reference_median_s")),
        "naive": _positive(performance.get("naive_median_s")),
    }
    values: dict[str, float] = {}
    if measure == "relative_to_reference":
        ref = times["reference"]
        if ref is not None:
            values["reference"] = 1.0
            if times["naive"] is not None:
                values["naive"] = ref / times["naive"]
        return values
    if measure == "speedup_vs_naive":
        naive = times["naive"]
        if naive is not None:
            values["naive"] = 1.0
            if times["reference"] is not None:
                values["reference"] = naive / times["reference"]
        return values
    value = _positive(performance.get("measure_value"))
    if value is None or own is None:
        return values
    for name, seconds in times.items():
        if seconds is not None:
            values[name] = value * own / seconds
    return values


def build(
    performance: Mapping[str, Any] | None, curve: Curve | None, performance_points: float
) -> Ladder | None:
    """The ladder of a scored grading, or None (no curve, no timing, nothing to place)."""
    if curve is None or performance is None or performance_points <= 0:
        return None
    values = companion_values(performance, curve.measure)
    own = performance.get("measure_value")
    if isinstance(own, int | float) and not isinstance(own, bool):
        values["submission"] = float(own)
    if not values:
        return None
    rungs: list[LadderRung] = []
    for name in RUNG_ORDER:
        if name in values:
            points = curve.points(values[name], performance_points)
            # The submission's own points are the report's (a flag or an interpreted kernel
            # earns none, whatever its figure); the companions' are what their figure earns.
            if name == "submission" and "points" in performance:
                points = float(performance["points"])
            rungs.append({"name": name, "value": round(values[name], 4), "points": points})
    return {
        "measure": curve.measure,
        "full_at": curve.full_at,
        "zero_at": curve.zero_at,
        "performance_points": performance_points,
        "rungs": rungs,
    }
