"""The roofline chart: roofs, ridge point and three points, drawn as escaped inline SVG."""

from __future__ import annotations

import json
from pathlib import Path

from django.utils import translation

from courseware.submissions.roofline_chart import ChartPoint, chart_from_report, roofline_chart

SAMPLE_REPORTS = Path(__file__).resolve().parent / "sample_reports"


def test_a_real_report_draws_both_roofs_the_ridge_and_three_points() -> None:
    report = json.loads((SAMPLE_REPORTS / "vector-add" / "fast.json").read_text())
    with translation.override("en"):
        chart = chart_from_report(report)
    assert chart is not None
    svg = str(chart.svg)
    assert svg.startswith('<svg id="roofline-chart"')
    for part in ('id="memory-roof"', 'id="compute-roof"', 'id="ridge-point"'):
        assert part in svg
    assert svg.count('class="point"') == 3
    assert "Arithmetic intensity (FLOP/B, log scale)" in svg and "Memory roof:" in svg
    assert chart.notes == []


def test_the_axes_are_labelled_in_chinese() -> None:
    report = json.loads((SAMPLE_REPORTS / "matmul" / "fast.json").read_text())
    with translation.override("zh-hans"):
        chart = chart_from_report(report)
    assert chart is not None
    assert "算术强度" in chart.svg and "内存屋顶" in chart.svg and "脊点" in chart.svg


def test_without_a_compute_peak_it_draws_the_memory_roof_and_says_so() -> None:
    point = ChartPoint("submission", "Your code", 0.083, 1.4e9)
    with translation.override("en"):
        chart = roofline_chart(
            points=[point], peak_gbps=21.8, peak_flops_per_s=None, device="Some CPU"
        )
    assert 'id="memory-roof"' in chart.svg and 'id="compute-roof"' not in chart.svg
    assert any("No compute peak" in note and "Some CPU" in note for note in chart.notes)


def test_text_from_the_report_is_escaped() -> None:
    point = ChartPoint("submission", "<b>me</b>", 1.0, 1e9)
    chart = roofline_chart(
        points=[point], peak_gbps=10.0, peak_flops_per_s=1e11, device='<script>"x"</script>'
    )
    assert "<script>" not in chart.svg and "&lt;script&gt;" in chart.svg
    assert "<b>" not in chart.svg


def test_a_report_without_figures_has_no_chart() -> None:
    assert chart_from_report({"verdict": "wrong", "performance": None}) is None
