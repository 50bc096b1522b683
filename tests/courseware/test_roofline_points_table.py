"""The report's roofline chart has a text alternative: the same points as a table."""

from __future__ import annotations

import re

from courseware.submissions.roofline_chart import attainable, chart_from_report
from tests.conftest import Cast
from tests.courseware.submissions.test_report_page import graded, page_of, sample


def test_the_report_lists_every_point_of_the_chart_in_a_table(cast: Cast) -> None:
    report = sample("fast")
    chart = chart_from_report(report)
    assert chart is not None and chart.rows, "the sample report has timed points"
    html = page_of(cast.alice, graded(cast, report))
    table = re.search(r'<table id="roofline-points">(.*?)</table>', html, re.S)
    assert table is not None
    for label, intensity, achieved, roof in chart.rows:
        assert f'<th scope="row">{label}</th>' in table.group(1)
        for figure in (intensity, achieved, roof):
            assert figure in table.group(1)
    # The point's own marker in the SVG carries the same label.
    assert chart.rows[0][0] in str(chart.svg)


def test_the_roof_at_an_intensity_is_the_lower_measured_roof() -> None:
    assert attainable(0.25, 2e12, 1e15) == 0.5e12  # memory-bound
    assert attainable(1000, 2e12, 1e15) == 1e15  # compute-bound
    assert attainable(0.25, None, 1e15) == 1e15
    assert attainable(0.25, None, None) is None
