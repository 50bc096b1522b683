"""The roofline chart of one report, drawn on the server as inline SVG (no script, no library).

Log-log axes: arithmetic intensity (FLOP/B) across, achieved FLOP/s up. The memory roof is the
line ``FLOP/s = intensity × peak bandwidth``; the compute roof is the flat line at the peak
FLOP/s; they meet at the ridge point. The submission, the reference and the naive version share
the exercise's intensity (its bytes and FLOPs are counted from the exercise's sizes, not from
the code), so they stand on one vertical line, at the height of what each achieved.

Every text that reaches the markup goes through ``escape``: device names and labels come from
reports and catalogs, never trusted as markup.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from courseware.submissions import readable_units as units

WIDTH, HEIGHT = 640, 420
LEFT, RIGHT, TOP, BOTTOM = 78, 24, 20, 96  # the plot's margins; the legend sits below it
_PLOT_W, _PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
_MARKERS = {"submission": "#c2410c", "reference": "#1d4ed8", "naive": "#6b7280"}


@dataclass(frozen=True)
class ChartPoint:
    key: str  # "submission", "reference" or "naive": picks the marker
    label: str
    intensity: float
    flops_per_s: float


@dataclass
class RooflineChart:
    svg: SafeString
    notes: list[str] = field(default_factory=list)  # what the chart could not show, and why
    summary: str = ""  # the chart in one sentence, for screen readers and the page
    # The same points as a table (a text alternative anyone can read, not only a screen
    # reader): label, arithmetic intensity, achieved FLOP/s, and the roof above that intensity.
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class _Scale:
    low: float  # log10 of the axis's first value
    high: float

    def at(self, value: float, length: float) -> float:
        return (math.log10(value) - self.low) / (self.high - self.low) * length


def _decades(values: list[float], pad: float) -> _Scale:
    logs = [math.log10(v) for v in values]
    return _Scale(math.floor(min(logs) - pad), math.ceil(max(logs) + pad))


def points_from_report(performance: Mapping[str, Any]) -> list[ChartPoint]:
    """The submission, the reference and the naive version, where the report timed them."""
    flops, ai = performance.get("flops") or 0.0, performance.get("arithmetic_intensity")
    if not ai or ai <= 0 or flops <= 0:
        return []
    found = [
        ChartPoint("submission", _("Your code"), ai, performance.get("achieved_flops_per_s") or 0)
    ]
    for key, label, seconds in (
        ("reference", _("Reference"), performance.get("reference_median_s")),
        ("naive", _("Naive version"), performance.get("naive_median_s")),
    ):
        if isinstance(seconds, int | float) and seconds > 0:
            found.append(ChartPoint(key, label, ai, flops / seconds))
    return [point for point in found if point.flops_per_s > 0]


def chart_from_report(report: Mapping[str, Any]) -> RooflineChart | None:
    """The chart for a report with timed figures; None when nothing was timed."""
    performance = report.get("performance")
    if not isinstance(performance, Mapping):
        return None
    peak = report.get("peak") or {}
    device = (report.get("device") or {}).get("name") or _("this device")
    return roofline_chart(
        points=points_from_report(performance),
        peak_gbps=peak.get("gbps") or performance.get("peak_gbps"),
        peak_flops_per_s=peak.get("flops_per_s"),
        device=str(device),
    )


def roofline_chart(
    *,
    points: list[ChartPoint],
    peak_gbps: float | None,
    peak_flops_per_s: float | None,
    device: str,
) -> RooflineChart:
    notes: list[str] = []
    bandwidth = peak_gbps * 1e9 if peak_gbps and peak_gbps > 0 else None
    compute = peak_flops_per_s if peak_flops_per_s and peak_flops_per_s > 0 else None
    if bandwidth is None:
        notes.append(
            _("No peak bandwidth was measured for %(device)s: no memory roof is drawn.")
            % {"device": device}
        )
    if compute is None:
        notes.append(
            _("No compute peak was measured for %(device)s: only the memory roof is drawn.")
            % {"device": device}
        )
    if not points:
        notes.append(
            _(
                "This exercise counts no floating-point operations (or nothing was timed), so "
                "it has no place on the chart's logarithmic axes; read its bandwidth instead."
            )
        )
    ridge = compute / bandwidth if bandwidth and compute else None
    xs = [p.intensity for p in points] + ([ridge] if ridge else [])
    if not xs:
        return RooflineChart(svg=mark_safe(""), notes=notes)
    x_scale = _decades(xs, pad=1.0)
    x_low, x_high = 10**x_scale.low, 10**x_scale.high
    ys = [p.flops_per_s for p in points]
    if compute:
        ys.append(compute)
    if bandwidth:
        ys.append(bandwidth * min(xs))
        ys.append(min(bandwidth * max(xs), compute or math.inf))
    y_scale = _decades(ys, pad=0.3)
    body = [
        *_grid(x_scale, y_scale),
        *_roofs(x_scale, y_scale, bandwidth, compute, ridge, (x_low, x_high)),
        *_points(points, x_scale, y_scale),
        *_axes_labels(),
        *_legend(points),
    ]
    summary = _summary(points, peak_gbps, compute, ridge, device)
    title = _("Roofline model of %(device)s") % {"device": device}
    svg = (
        f'<svg id="roofline-chart" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" style="max-width:{WIDTH}px" role="img" '
        f'aria-labelledby="roofline-title roofline-desc" font-family="system-ui, sans-serif" '
        f'font-size="12">'
        f'<title id="roofline-title">{escape(title)}</title>'
        f'<desc id="roofline-desc">{escape(summary)}</desc>' + "".join(body) + "</svg>"
    )
    rows = [
        (
            point.label,
            units.intensity(point.intensity),
            units.si(point.flops_per_s, "FLOP/s"),
            units.si(attainable(point.intensity, bandwidth, compute), "FLOP/s"),
        )
        for point in points
    ]
    # Safe: built from numbers and escaped text only.
    return RooflineChart(svg=mark_safe(svg), notes=notes, summary=summary, rows=rows)


def attainable(intensity: float, bandwidth: float | None, compute: float | None) -> float | None:
    """The roofline's bound at this intensity: the lower of the two roofs that were measured."""
    roofs = [r for r in (bandwidth * intensity if bandwidth else None, compute) if r]
    return min(roofs) if roofs else None


def _x(scale: _Scale, value: float) -> float:
    return LEFT + scale.at(value, _PLOT_W)


def _y(scale: _Scale, value: float) -> float:
    return TOP + _PLOT_H - scale.at(value, _PLOT_H)


def _grid(xs: _Scale, ys: _Scale) -> list[str]:
    parts = [
        f'<rect x="{LEFT}" y="{TOP}" width="{_PLOT_W}" height="{_PLOT_H}" fill="#fff" '
        f'stroke="#999"/>'
    ]
    for exponent in range(int(xs.low), int(xs.high) + 1):
        x = _x(xs, 10.0**exponent)
        parts.append(
            f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + _PLOT_H}" stroke="#eee"/>'
            f'<text x="{x:.1f}" y="{TOP + _PLOT_H + 16}" text-anchor="middle">'
            f"{escape(_tick(10.0**exponent))}</text>"
        )
    for exponent in range(int(ys.low), int(ys.high) + 1):
        y = _y(ys, 10.0**exponent)
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + _PLOT_W}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(_tick(10.0**exponent))}</text>"
        )
    return parts


def _tick(value: float) -> str:
    """Decade labels: 0.01, 0.1, 1, 10, 100, 1 k, 10 k … 1 G (SI prefixes above 1000)."""
    if value < 1000:
        return f"{value:g}"
    return units.si(value, "").strip()


def _roofs(
    xs: _Scale,
    ys: _Scale,
    bandwidth: float | None,
    compute: float | None,
    ridge: float | None,
    x_range: tuple[float, float],
) -> list[str]:
    parts: list[str] = []
    x_low, x_high = x_range
    y_low, y_high = 10**ys.low, 10**ys.high
    if bandwidth:
        # The memory roof, clipped to the plot: from where it enters at the bottom (or left)
        # to the ridge, or to where it leaves at the top (or right) when there is no ridge.
        start = max(x_low, y_low / bandwidth)
        end = min(ridge or x_high, y_high / bandwidth, x_high)
        if end > start:
            x1, y1 = _x(xs, start), _y(ys, start * bandwidth)
            x2, y2 = _x(xs, end), _y(ys, end * bandwidth)
            label = _("Memory roof: %(bandwidth)s") % {
                "bandwidth": units.bandwidth(bandwidth / 1e9)
            }
            angle = math.degrees(math.atan2(y2 - y1, x2 - x1))
            mid_x, mid_y = (x1 + x2) / 2, (y1 + y2) / 2
            parts.append(
                f'<line id="memory-roof" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" '
                f'y2="{y2:.1f}" stroke="#15803d" stroke-width="2.5"/>'
                f'<text x="{mid_x:.1f}" y="{mid_y - 8:.1f}" fill="#15803d" text-anchor="middle" '
                f'transform="rotate({angle:.1f} {mid_x:.1f} {mid_y:.1f})">{escape(label)}</text>'
            )
    if compute and y_low <= compute <= y_high:
        start = ridge if ridge and ridge > x_low else x_low
        x1, x2, y = _x(xs, start), _x(xs, x_high), _y(ys, compute)
        label = _("Compute roof: %(flops)s") % {"flops": units.si(compute, "FLOP/s")}
        parts.append(
            f'<line id="compute-roof" x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}" '
            f'stroke="#7e22ce" stroke-width="2.5"/>'
            f'<text x="{x2 - 4:.1f}" y="{y - 6:.1f}" fill="#7e22ce" text-anchor="end">'
            f"{escape(label)}</text>"
        )
    if ridge and compute and x_low <= ridge <= x_high:
        x, y = _x(xs, ridge), _y(ys, compute)
        label = _("Ridge point: %(intensity)s") % {"intensity": units.intensity(ridge)}
        parts.append(
            f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{TOP + _PLOT_H}" stroke="#7e22ce" '
            f'stroke-dasharray="4 3"/>'
            f'<circle id="ridge-point" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#7e22ce"/>'
            f'<text x="{x + 6:.1f}" y="{TOP + _PLOT_H - 6}" fill="#7e22ce">{escape(label)}</text>'
        )
    return parts


def _marker(key: str, x: float, y: float) -> str:
    color = _MARKERS.get(key, "#000")
    if key == "reference":
        return f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="{color}"/>'
    if key == "naive":
        return (
            f'<polygon points="{x:.1f},{y - 6:.1f} {x - 6:.1f},{y + 5:.1f} {x + 6:.1f},{y + 5:.1f}"'
            f' fill="{color}"/>'
        )
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{color}" stroke="#fff"/>'


def _points(points: list[ChartPoint], xs: _Scale, ys: _Scale) -> list[str]:
    parts = []
    # Drawn last to first, so the submission's marker lies on top of the other two.
    for point in reversed(points):
        x, y = _x(xs, point.intensity), _y(ys, point.flops_per_s)
        text = f"{point.label}: {units.si(point.flops_per_s, 'FLOP/s')}"
        parts.append(
            f'<g class="point" data-point="{escape(point.key)}"><title>{escape(text)}</title>'
            f"{_marker(point.key, x, y)}</g>"
        )
    return parts


def _axes_labels() -> list[str]:
    x_label = _("Arithmetic intensity (FLOP/B, log scale)")
    y_label = _("Performance (FLOP/s, log scale)")
    y_mid = TOP + _PLOT_H / 2
    return [
        f'<text x="{LEFT + _PLOT_W / 2:.1f}" y="{TOP + _PLOT_H + 36}" text-anchor="middle" '
        f'font-weight="bold">{escape(x_label)}</text>',
        f'<text x="16" y="{y_mid:.1f}" text-anchor="middle" font-weight="bold" '
        f'transform="rotate(-90 16 {y_mid:.1f})">{escape(y_label)}</text>',
    ]


def _legend(points: list[ChartPoint]) -> list[str]:
    """One row per point under the axis label (rows, not columns: Chinese labels are wider)."""
    parts = []
    for row, point in enumerate(points):
        y = TOP + _PLOT_H + 56 + 16 * row
        text = f"{point.label}: {units.si(point.flops_per_s, 'FLOP/s')}"
        parts.append(
            f"{_marker(point.key, LEFT + 6, y - 4)}"
            f'<text x="{LEFT + 18}" y="{y}">{escape(text)}</text>'
        )
    return parts


def _summary(
    points: list[ChartPoint],
    peak_gbps: float | None,
    compute: float | None,
    ridge: float | None,
    device: str,
) -> str:
    parts = [
        _("Memory roof %(bandwidth)s, compute roof %(flops)s, ridge point %(ridge)s on %(device)s.")
        % {
            "bandwidth": units.bandwidth(peak_gbps),
            "flops": units.si(compute, "FLOP/s"),
            "ridge": units.intensity(ridge),
            "device": device,
        }
    ]
    for point in points:
        parts.append(
            _("%(label)s: %(flops)s at %(intensity)s.")
            % {
                "label": point.label,
                "flops": units.si(point.flops_per_s, "FLOP/s"),
                "intensity": units.intensity(point.intensity),
            }
        )
    return " ".join(parts)
