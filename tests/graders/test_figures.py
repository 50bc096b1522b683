"""Pure functions: statistics, roofline, scoring curve, correctness, schema validator."""

from __future__ import annotations

import pytest
import torch

from graders.grading import correctness
from graders.measure import load as machine_load
from graders.measure import stats as measure
from graders.report import build as report
from graders.report import roofline
from graders.report import schema as report_schema
from graders.spec.exercise import Curve, TimingPolicy, Tolerance


def test_summary_statistics() -> None:
    summary = measure.summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert summary.median_s == 3.0
    assert summary.runs == 5
    assert summary.iqr_s == pytest.approx(2.0)
    assert summary.cv > 1


def test_stopping_rule() -> None:
    policy = TimingPolicy(min_runs=3, max_runs=6, target_median_error=0.05)
    assert not measure.should_stop([1.0, 1.0], policy, 0.1, 30)
    assert measure.should_stop([1.0, 1.0, 1.0], policy, 0.1, 30)
    assert not measure.should_stop([1.0, 2.0, 3.0], policy, 0.1, 30)
    assert measure.should_stop([1.0, 2.0, 3.0] * 2, policy, 0.1, 30)
    assert measure.should_stop([1.0, 2.0], policy, 25.0, 30)  # budget nearly spent


def test_a_ratio_is_known_on_its_own_spread_not_on_the_times() -> None:
    """A relative curve stops on the rounds' ratios: times that wander together (a host's
    bandwidth) leave the ratio steady, and it is known long before the times are."""
    policy = TimingPolicy(min_runs=3, max_runs=25, target_median_error=0.015)
    student = [1.0, 1.3, 0.8, 1.1, 0.9]
    anchor = [1.01 * t for t in student]
    ratios = [a / s for a, s in zip(anchor, student, strict=True)]
    assert not measure.should_stop(student, policy, 0.1, 30)
    assert machine_load.ratio_known(ratios, policy, None, policy.min_runs)
    assert not machine_load.ratio_known(ratios[:2], policy, None, policy.min_runs)
    assert not measure.at_cap(student, policy, 0.1, 30)
    assert measure.at_cap(student * 5, policy, 0.1, 30)  # max_runs


def test_a_wide_ratio_is_known_once_more_rounds_could_not_change_its_points() -> None:
    policy = TimingPolicy(min_runs=5, max_runs=25, target_median_error=0.015)
    curve = Curve("relative_to_reference", full_at=0.85, zero_at=0.75)
    as_fast = [1.0, 1.12, 0.95, 1.05, 0.9, 1.08]  # ~5 % standard error, all well past full_at
    assert machine_load.ratio_known(as_fast, policy, curve, policy.min_runs)
    assert not machine_load.ratio_known(as_fast, policy, None, policy.min_runs)
    on_the_ramp = [0.8 * r for r in as_fast]  # the same spread where points change with it
    assert not machine_load.ratio_known(on_the_ramp, policy, curve, policy.min_runs)
    naive = [0.5 * r for r in as_fast]  # wholly short of zero_at
    assert machine_load.ratio_known(naive, policy, curve, policy.min_runs)
    assert curve.flat_around(1.0, 0.1) and not curve.flat_around(0.9, 0.1)


def test_roofline_memory_bound() -> None:
    perf = roofline.figures(nbytes=12e9, flops=1e9, median_s=1.0, peak_gbps=20.0, peak_flops=1e11)
    assert perf["achieved_gbps"] == pytest.approx(12.0)
    assert perf["fraction_of_peak"] == pytest.approx(0.6)
    assert perf["roof"] == "memory"
    assert perf["roofline_bound_s"] == pytest.approx(0.6)
    assert perf["arithmetic_intensity"] == pytest.approx(1 / 12)
    assert not roofline.implausible(perf["fraction_of_roofline"])


def test_roofline_compute_bound_and_implausible() -> None:
    perf = roofline.figures(nbytes=1e6, flops=1e12, median_s=1.0, peak_gbps=20.0, peak_flops=1e11)
    assert perf["roof"] == "compute"
    # 10x faster than the compute roof allows
    assert roofline.implausible(perf["fraction_of_roofline"])


def test_curve_points() -> None:
    curve = Curve("fraction_of_peak_bandwidth", full_at=0.6, zero_at=0.1)
    assert curve.points(0.05, 4) == 0
    assert curve.points(0.35, 4) == pytest.approx(2)
    assert curve.points(0.9, 4) == 4
    assert curve.points(None, 4) == 0


def test_compare_reports_first_mismatch() -> None:
    expected = torch.zeros(2, 3)
    got = expected.clone()
    got[1, 2] = 5.0
    result = correctness.compare(got, expected, Tolerance(1e-6, 1e-5))
    assert not result.passed
    assert result.first_mismatch == {"index": [1, 2], "got": 5.0, "expected": 0.0}
    assert result.mismatch_fraction == pytest.approx(1 / 6)
    assert result.max_abs_err == 5.0


def test_compare_nan_matches_nan_only() -> None:
    expected = torch.tensor([float("nan"), 1.0])
    assert correctness.compare(expected.clone(), expected, Tolerance(0, 0)).passed
    result = correctness.compare(torch.tensor([0.0, 1.0]), expected, Tolerance(0, 0))
    assert not result.passed and result.first_mismatch is not None
    assert result.first_mismatch["expected"] == "nan"


def test_compare_over_many_chunks_finds_the_first_and_the_largest() -> None:
    # Several of the comparison's chunks (64K elements each), mismatches in later ones only.
    expected = torch.linspace(1.0, 2.0, 300_000).reshape(3, 100_000)
    got = expected.clone()
    got[1, 70_000] += 0.5  # flat 170000: the third chunk
    got[2, 99_999] += 3.0  # the last element: the largest error
    result = correctness.compare(got, expected, Tolerance(1e-6, 1e-5))
    assert not result.passed
    assert result.first_mismatch is not None and result.first_mismatch["index"] == [1, 70_000]
    assert result.max_abs_err == pytest.approx(3.0, rel=1e-6)
    assert result.mismatch_fraction == pytest.approx(2 / 300_000)
    # An infinity in a late chunk makes the errors infinite, as in one pass.
    got = expected.clone()
    got[2, 5] = float("inf")
    result = correctness.compare(got, expected, Tolerance(1e-6, 1e-5))
    assert not result.passed and result.max_abs_err == float("inf")
    # Within tolerance but not bit-for-bit equal: passes, with its small error reported.
    result = correctness.compare(expected * (1 + 1e-7), expected, Tolerance(1e-6, 1e-5))
    assert result.passed and 0 < (result.max_rel_err or 0) < 1e-5


def test_description_checks() -> None:
    expected = torch.zeros(4)
    ok = {"type": "Tensor", "shape": [4], "dtype": "float32", "device": "cpu"}
    assert correctness.check_description(ok, expected, "cpu").passed
    assert (
        correctness.check_description({**ok, "dtype": "float16"}, expected, "cpu").problem
        == "dtype"
    )
    assert (
        correctness.check_description({**ok, "device": "cpu"}, expected, "cuda").problem == "device"
    )
    assert correctness.check_description({"type": "list"}, expected, "cpu").problem == "type"


def test_mutation_detected() -> None:
    a = torch.ones(3)
    assert correctness.mutated_input([a], {"a": a.clone()}, ["a"]) is None
    assert correctness.mutated_input([a], {"a": a * 2}, ["a"]) == "a"


def test_validator_catches_bad_reports() -> None:
    good = report.grader_failure(exercise="x", max_score=10, device="cpu", message="boom")
    assert report_schema.validate(good) == []
    assert report_schema.validate({**good, "verdict": "maybe"})
    bad = dict(good)
    del bad["timings"]
    assert any("timings" in e for e in report_schema.validate(bad))


def test_reports_are_strict_json() -> None:
    import json

    safe = report.json_safe({"a": [float("nan"), float("inf"), 1.5], "b": {"c": -float("inf")}})
    assert safe == {"a": ["nan", "inf", 1.5], "b": {"c": "-inf"}}
    json.dumps(safe, allow_nan=False)
