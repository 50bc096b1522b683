"""The report's ladder block (graders/report/ladder.py): built from the report's own figures."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from graders import load_exercise
from graders.measure.stats import Summary
from graders.report import ladder, schema
from graders.report.build import ReportBuilder, TimedFigures
from graders.spec.exercise import Curve

CHAPTER = Path(__file__).resolve().parents[2] / "exercises" / "ch15"


def test_on_the_reference_axis_the_companions_follow_from_their_times() -> None:
    curve = Curve("relative_to_reference", 0.9, 0.5)
    perf = {
        "median_s": 0.010,
        "reference_median_s": 0.008,
        "naive_median_s": 0.020,
        "measure_value": 0.8,
        "points": 3.0,
    }
    block = ladder.build(perf, curve, 4.0)
    assert block is not None
    assert block["measure"] == "relative_to_reference"
    rungs = {r["name"]: r for r in block["rungs"]}
    assert [r["name"] for r in block["rungs"]] == ["naive", "reference", "submission"]
    assert rungs["reference"] == {"name": "reference", "value": 1.0, "points": 4.0}
    assert rungs["naive"]["value"] == pytest.approx(0.4)  # 8 ms against 20 ms
    assert rungs["naive"]["points"] == 0.0
    assert rungs["submission"] == {"name": "submission", "value": 0.8, "points": 3.0}


def test_a_flagged_submission_shows_the_points_it_was_given_not_its_figure_s() -> None:
    curve = Curve("relative_to_reference", 0.9, 0.5)
    perf = {"median_s": 0.01, "reference_median_s": 0.01, "measure_value": 1.0, "points": 0.0}
    block = ladder.build(perf, curve, 4.0)
    assert block is not None
    assert block["rungs"][-1] == {"name": "submission", "value": 1.0, "points": 0.0}
    assert [r["name"] for r in block["rungs"]] == ["reference", "submission"]  # naive not timed


def test_on_an_absolute_axis_each_figure_scales_with_the_inverse_of_its_time() -> None:
    curve = Curve("fraction_of_peak_bandwidth", 0.7, 0.2)
    perf = {
        "median_s": 0.010,
        "reference_median_s": 0.005,
        "naive_median_s": 0.040,
        "measure_value": 0.3,
        "points": 0.8,
    }
    block = ladder.build(perf, curve, 4.0)
    assert block is not None
    values = {r["name"]: r["value"] for r in block["rungs"]}
    assert values == {"naive": 0.075, "reference": 0.6, "submission": 0.3}
    points = {r["name"]: r["points"] for r in block["rungs"]}
    assert points["reference"] == pytest.approx(3.2) and points["naive"] == 0.0


def test_speedup_axis_puts_the_naive_version_at_one() -> None:
    curve = Curve("speedup_vs_naive", 4.0, 1.5)
    perf = {"median_s": 0.01, "reference_median_s": 0.005, "naive_median_s": 0.03}
    block = ladder.build({**perf, "measure_value": 3.0}, curve, 4.0)
    assert block is not None
    values = {r["name"]: r["value"] for r in block["rungs"]}
    assert values == {"naive": 1.0, "reference": 6.0, "submission": 3.0}


def test_nothing_to_place_gives_no_ladder() -> None:
    curve = Curve("relative_to_reference", 0.9, 0.5)
    assert ladder.build(None, curve, 4.0) is None
    assert ladder.build({"median_s": 0.01}, None, 4.0) is None
    assert ladder.build({"median_s": 0.01}, curve, 0.0) is None
    assert ladder.build({"median_s": 0.01, "measure_value": None}, curve, 4.0) is None


def test_a_finished_report_carries_its_ladder_and_validates() -> None:
    spec = load_exercise(CHAPTER / "softmax")
    curve = Curve("relative_to_reference", 0.9, 0.5)
    spec = dataclasses.replace(
        spec, scoring=dataclasses.replace(spec.scoring, curves={"cpu": curve})
    )
    builder = ReportBuilder(spec, "cpu")
    builder.set_peaks({"gbps": 20.0, "flops_per_s": 5e10, "method": "test"})
    timed = TimedFigures(
        summary=Summary(0.010, 0.0002, 0.01, 9),
        sizes=dict(spec.sizes["cpu"].timed),
        claimed_s=0.01,
        observed_s=0.01,
        disturbed_runs=0,
        reference_median_s=0.0095,
        naive_median_s=0.030,
        relative_to_reference=0.95,
        speedup_vs_naive=3.0,
    )
    builder.set_performance(timed, [])
    report = builder.finish("correct", None, total_s=1.0)
    block, perf = report["ladder"], report["performance"]
    assert [r["name"] for r in block["rungs"]] == ["naive", "reference", "submission"]
    assert perf is not None and block["rungs"][-1]["points"] == perf["points"] == 4.0
    assert schema.validate(report) == []
    wrong = ReportBuilder(spec, "cpu").finish("wrong", "no", total_s=1.0)
    assert "ladder" not in wrong
