"""The ladder as a student reads it: the naive version, the reference and their own figure on
one axis, with the points each earns (issue 26, item 3).

The figures are never made up here. A report carries its own ladder (graders/report/ladder.py:
the companions were timed in the same grading). The exercise page takes the naive and
reference rungs from the student's latest report that has a ladder, or else from the latest
``--perf`` validation of the exercise's exact content (graders/authoring/validate.py), and the
student's best figure from their own reports. Where none of these exists, there is no ladder.

The axis is drawn as an SVG whose marks sit at fractions of its width; the same figures are in
a table beside it for screen readers and for anyone who prefers numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from courseware.submissions import readable_units as units

# The drawing's coordinates (SVG user units): the axis runs from AXIS_LEFT to AXIS_RIGHT.
WIDTH, AXIS_LEFT, AXIS_RIGHT = 640, 24, 616
AXIS_Y = 78
# Each rung's label sits on a row of its own above the axis, so close figures never overlap.
ROW_Y = {"naive": 22, "reference": 40, "submission": 58, "best": 58}


@dataclass(frozen=True)
class RungView:
    key: str  # naive | reference | submission | best
    label: str
    value: float
    value_text: str
    points: float
    points_text: str
    x: float  # on the drawing
    label_y: int
    anchor: str  # the label's text-anchor, kept inside the drawing


@dataclass(frozen=True)
class LadderView:
    axis_label: str
    performance_points_text: str
    zero_x: float
    full_x: float
    zero_text: str
    full_text: str
    rungs: list[RungView]
    source: str  # where the figures come from, in a sentence
    width: int = WIDTH
    axis_left: int = AXIS_LEFT
    axis_right: int = AXIS_RIGHT
    axis_y: int = AXIS_Y

    @property
    def none_width(self) -> float:
        """The stretch of axis below zero_at, where a figure earns no performance points."""
        return max(0.0, self.zero_x - self.axis_left)


def axis_label(measure: str) -> str:
    return {
        "fraction_of_peak_bandwidth": _("Fraction of the peak bandwidth"),
        "fraction_of_peak_flops": _("Fraction of the peak FLOP/s"),
        "fraction_of_roofline": _("Fraction of the roofline"),
        "relative_to_reference": _("Speed relative to the reference (1 = as fast)"),
        "speedup_vs_naive": _("Speed-up over the naive version (1 = as fast)"),
    }.get(measure, measure)


def value_text(measure: str, value: float) -> str:
    return units.percent(value) if measure.startswith("fraction") else units.ratio(value)


def rung_label(key: str) -> str:
    return {
        "naive": _("Naive version"),
        "reference": _("Reference"),
        "submission": _("This submission"),
        "best": _("Your best so far"),
    }.get(key, key)


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _axis_max(values: Iterable[float], full_at: float) -> float:
    """A little beyond the largest figure or full_at, so every mark is inside the axis."""
    return max([full_at, *values]) * 1.12 or 1.0


def ladder_view(
    block: Mapping[str, Any] | None,
    *,
    source: str,
    keep: tuple[str, ...] = ("naive", "reference", "submission"),
    extra: Mapping[str, Mapping[str, Any]] | None = None,
) -> LadderView | None:
    """The view of a ladder block (a report's ``ladder`` or a validation's record).

    ``keep``: which of the block's rungs to show; ``extra``: rungs from elsewhere by key
    (the student's best, on the exercise page), each a mapping with value and points.
    """
    if not isinstance(block, Mapping):
        return None
    measure = str(block.get("measure") or "")
    full_at, zero_at = _number(block.get("full_at")), _number(block.get("zero_at"))
    points_max = _number(block.get("performance_points"))
    if not measure or full_at is None or zero_at is None or points_max is None:
        return None
    picked: list[tuple[str, float, float]] = []
    for rung in [*(block.get("rungs") or []), *(dict(r, name=k) for k, r in (extra or {}).items())]:
        key = str(rung.get("name"))
        value, points = _number(rung.get("value")), _number(rung.get("points"))
        if value is not None and points is not None and (key in keep or key in (extra or {})):
            picked.append((key, value, points))
    if not picked:
        return None
    top = _axis_max((value for _, value, _ in picked), full_at)

    def x(value: float) -> float:
        share = min(1.0, max(0.0, value / top))
        return round(AXIS_LEFT + share * (AXIS_RIGHT - AXIS_LEFT), 1)

    rungs = []
    for key, value, points in picked:
        where = x(value)
        anchor = "start" if where < WIDTH * 0.2 else "end" if where > WIDTH * 0.8 else "middle"
        rungs.append(
            RungView(
                key=key,
                label=rung_label(key),
                value=value,
                value_text=value_text(measure, value),
                points=points,
                points_text=units.points(points),
                x=where,
                label_y=ROW_Y.get(key, 58),
                anchor=anchor,
            )
        )
    return LadderView(
        axis_label=axis_label(measure),
        performance_points_text=units.points(points_max),
        zero_x=x(zero_at),
        full_x=x(full_at),
        zero_text=value_text(measure, zero_at),
        full_text=value_text(measure, full_at),
        rungs=rungs,
        source=source,
    )


def report_ladder(report: Mapping[str, Any] | None) -> LadderView | None:
    """The ladder of one graded submission, from its own report."""
    if not report:
        return None
    return ladder_view(
        report.get("ladder"),
        source=_(
            "The naive version and the reference were timed in the same grading as this "
            "submission, call by call, so a busy machine slows all three alike."
        ),
    )


def _submission_rung(block: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for rung in block.get("rungs") or []:
        if rung.get("name") == "submission" and _number(rung.get("points")) is not None:
            return dict(rung)
    return None


def _has_companions(block: Mapping[str, Any]) -> bool:
    return any(r.get("name") in ("naive", "reference") for r in block.get("rungs") or [])


def exercise_ladder(
    reports: Iterable[tuple[int, Mapping[str, Any]]],
    validation: Mapping[str, Any] | None,
) -> LadderView | None:
    """The exercise page's ladder: naive and reference rungs, and the student's best so far.

    ``reports``: (submission id, report) of the student's graded submissions, newest first;
    ``validation``: the ladder of the latest --perf validation of this content, if any.
    """
    blocks = [
        (pk, report["ladder"])
        for pk, report in reports
        if isinstance(report, Mapping) and isinstance(report.get("ladder"), Mapping)
    ]
    best: tuple[int, Mapping[str, Any]] | None = None
    for pk, block in blocks:
        rung = _submission_rung(block)
        if rung is not None and (
            best is None or (rung["points"], rung["value"]) > (best[1]["points"], best[1]["value"])
        ):
            best = (pk, rung)
    extra = {"best": best[1]} if best is not None else {}
    latest = next(((pk, block) for pk, block in blocks if _has_companions(block)), None)
    if latest is not None:
        source = _(
            "The naive version and the reference as timed in your latest graded submission "
            "(#%(id)s), call by call beside it."
        ) % {"id": latest[0]}
        return ladder_view(latest[1], source=source, keep=("naive", "reference"), extra=extra)
    if isinstance(validation, Mapping) and _has_companions(validation):
        source = _(
            "The naive version and the reference as measured when this exercise was last "
            "validated; submit to see them timed beside your own code."
        )
        return ladder_view(validation, source=source, keep=("naive", "reference"), extra=extra)
    if best is not None:
        block = next(block for pk, block in blocks if pk == best[0])
        return ladder_view(block, source=_("Your best figure so far."), keep=(), extra=extra)
    return None
