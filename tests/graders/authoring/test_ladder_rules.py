"""The ladder's decisions, with injected figures (no timing): which rung fails, by how much.

Rules (issue 26, item 2): the naive version earns at most 25 % of the performance points; the
reference at least 95 %, with a margin (10 % above full_at, or a curve anchored on it); every
sample stays in its band. The figures below are reports as the engine stores them, trimmed to
what the ladder reads.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from graders import load_exercise
from graders.authoring import ladder_rules
from graders.authoring.ladder_rules import (
    curve_problems,
    ladder_problems,
    measured_ladder,
)
from graders.authoring.meta import SampleExpectation, load_expectations
from graders.spec.exercise import Curve, ExerciseSpec

REPO = Path(__file__).resolve().parents[3]
CHAPTER = REPO / "exercises" / "ch15"
SLUGS = ("vector-add", "softmax", "layernorm", "gelu-residual", "matmul", "attention")


def with_curve(spec: ExerciseSpec, device: str, curve: Curve) -> ExerciseSpec:
    curves = {**spec.scoring.curves, device: curve}
    return dataclasses.replace(spec, scoring=dataclasses.replace(spec.scoring, curves=curves))


def graded(value: float | None, score: float, verdict: str = "correct") -> dict[str, Any]:
    return {
        "verdict": verdict,
        "score": score,
        "performance": None if value is None else {"measure_value": value},
    }


@pytest.fixture
def softmax() -> ExerciseSpec:
    return with_curve(
        load_exercise(CHAPTER / "softmax"), "cpu", Curve("relative_to_reference", 0.9, 0.4)
    )


def test_a_slow_enough_naive_version_and_the_reference_pass(softmax: ExerciseSpec) -> None:
    reports = {"reference": graded(1.01, 10.0), "naive": graded(0.45, 6.4)}
    ladder = measured_ladder(softmax, "cpu", reports)
    assert ladder is not None
    assert [r["name"] for r in ladder["rungs"]] == ["naive", "reference"]
    assert ladder["rungs"][0]["points"] == pytest.approx(0.4)  # 10 % of 4
    assert ladder["rungs"][1]["points"] == 4.0
    assert ladder_problems(softmax, ladder, []) == []


def test_a_naive_version_that_earns_too_much_names_the_rung_and_the_fix(
    softmax: ExerciseSpec,
) -> None:
    # 0.64 on a 0.4 -> 0.9 curve: 48 % of 4 points.
    ladder = measured_ladder(
        softmax, "cpu", {"reference": graded(1.0, 10), "naive": graded(0.64, 7.9)}
    )
    assert ladder is not None
    [problem] = ladder_problems(softmax, ladder, [])
    assert problem.startswith("ladder: the naive version earns 1.9 of 4 performance points (48 %")
    assert "at most 25 % (1.0) is allowed" in problem
    # (0.64 - 0.25 * 0.9) / 0.75 = 0.553: the zero_at that would give the naive version 25 %.
    assert "raise zero_at above 0.55" in problem
    fixed = with_curve(softmax, "cpu", Curve("relative_to_reference", 0.9, 0.56))
    refixed = measured_ladder(
        fixed, "cpu", {"reference": graded(1.0, 10), "naive": graded(0.64, 7)}
    )
    assert refixed is not None and ladder_problems(fixed, refixed, []) == []


def test_exactly_a_quarter_is_allowed(softmax: ExerciseSpec) -> None:
    # 0.525 on 0.4 -> 0.9 is 25 % exactly.
    ladder = measured_ladder(softmax, "cpu", {"naive": graded(0.525, 7.0)})
    assert ladder is not None and ladder_problems(softmax, ladder, []) == []


def test_a_reference_below_a_curve_too_close_to_it_is_refused(softmax: ExerciseSpec) -> None:
    # full_at 0.97 breaks the static rule; measured, the reference at 0.93 of itself (within
    # the run's noise) earns 93 % of the points on it.
    steep = with_curve(softmax, "cpu", Curve("relative_to_reference", 0.97, 0.4))
    ladder = measured_ladder(steep, "cpu", {"reference": graded(0.93, 9.7)})
    assert ladder is not None
    [problem] = ladder_problems(steep, ladder, [])
    assert problem.startswith("ladder: the reference earns 3.7 of 4 performance points (93 %")
    assert "at least 95 % (3.8) is required" in problem
    assert "lower full_at to 0.85 or below" in problem


@pytest.mark.parametrize("itself", [0.72, 1.15])
def test_a_run_whose_reference_is_far_from_itself_judges_no_rung(
    softmax: ExerciseSpec, itself: float
) -> None:
    # Seen on the busy machine: the reference at 0.72 of itself. The naive version's 0.9
    # would fail, and a sample's band too; none of it is judged, the run is.
    slow = SampleExpectation("slow", "correct", 6.0, 7.5, where="slow")
    reports = {
        "reference": graded(itself, 9.0),
        "naive": graded(0.9, 10),
        "samples/slow": graded(0.9, 10),
    }
    ladder = measured_ladder(softmax, "cpu", reports)
    assert ladder is not None
    [problem] = ladder_problems(softmax, ladder, [slow])
    assert problem.startswith(f"ladder: not judged: the reference measured {itself:g} against")
    assert ladder_rules.noise_problem(ladder) == problem
    steady = measured_ladder(softmax, "cpu", {**reports, "reference": graded(0.95, 10)})
    assert steady is not None and ladder_rules.noise_problem(steady) is None
    assert len(ladder_problems(softmax, steady, [slow])) == 2  # naive and the band


def test_an_absolute_curve_needs_the_reference_ten_percent_above_full_at() -> None:
    spec = with_curve(
        load_exercise(CHAPTER / "vector-add"), "cuda", Curve("fraction_of_peak_bandwidth", 0.6, 0.1)
    )
    # Issue 26's figure: vector-add's reference at 0.52 of peak against full_at = 0.6.
    ladder = measured_ladder(spec, "cuda", {"reference": graded(0.52, 9.4)})
    assert ladder is not None
    [problem] = ladder_problems(spec, ladder, [])
    assert "the reference measures 0.52 on fraction_of_peak_bandwidth" in problem
    assert "21 % short of 1.10 x full_at = 0.66" in problem
    assert "lower full_at to 0.473 or below" in problem
    # At 0.67 it is full points with the margin: passes.
    ok = measured_ladder(spec, "cuda", {"reference": graded(0.67, 10)})
    assert ok is not None and ladder_problems(spec, ok, []) == []
    # Full points without the margin (issue 26's matmul: 0.77 against 0.75) is refused too.
    thin = with_curve(spec, "cuda", Curve("fraction_of_peak_bandwidth", 0.75, 0.2))
    tight = measured_ladder(thin, "cuda", {"reference": graded(0.77, 10)})
    assert tight is not None and tight["rungs"][0]["points"] == 4.0
    assert len(ladder_problems(thin, tight, [])) == 1


def test_a_sample_outside_its_band_says_which_side_and_by_how_much(softmax: ExerciseSpec) -> None:
    slow = SampleExpectation("slow", "correct", 6.0, 7.5, where="slow")
    ladder = measured_ladder(softmax, "cpu", {"samples/slow": graded(0.7, 8.4)})
    assert ladder is not None
    [problem] = ladder_problems(softmax, ladder, [slow])
    assert problem.startswith("ladder: sample 'slow' scores 8.4, 0.9 above its band [6, 7.5]")
    assert "relative_to_reference 0.7, 2.4 of 4 performance points" in problem
    inside = measured_ladder(softmax, "cpu", {"samples/slow": graded(0.5, 6.8)})
    assert inside is not None and ladder_problems(softmax, inside, [slow]) == []


def test_a_sample_with_another_verdict_is_left_to_the_verdict_check(softmax: ExerciseSpec) -> None:
    fast = SampleExpectation("fast", "correct", 8.0, 10.0, where="fast")
    ladder = measured_ladder(softmax, "cpu", {"samples/fast": graded(None, 0.0, "wrong")})
    assert ladder is not None and ladder_problems(softmax, ladder, [fast]) == []


def test_a_flagged_grading_keeps_its_figure_on_the_ladder(softmax: ExerciseSpec) -> None:
    # A flag zeroes the grading's points; the rung still counts what its figure earns, so a
    # flagged naive version cannot pass the ladder by accident.
    report = graded(0.9, 6.0)
    report["flags"] = ["cpu_outside_calls"]
    ladder = measured_ladder(softmax, "cpu", {"naive": report})
    assert ladder is not None and ladder["rungs"][0]["points"] == 4.0
    assert len(ladder_problems(softmax, ladder, [])) == 1


def test_the_static_rule_refuses_absolute_cpu_curves_and_thin_margins(
    softmax: ExerciseSpec,
) -> None:
    absolute = with_curve(softmax, "cpu", Curve("fraction_of_peak_bandwidth", 0.6, 0.1))
    [problem] = curve_problems(absolute)
    assert "field 'scoring.curve.cpu.measure'" in problem and "relative_to_reference" in problem
    thin = with_curve(softmax, "cpu", Curve("relative_to_reference", 0.95, 0.4))
    [problem] = curve_problems(thin)
    assert "full_at = 0.95" in problem and "set full_at to 0.91 or below" in problem
    over_naive = with_curve(softmax, "cpu", Curve("speedup_vs_naive", 2.0, 0.5))
    [problem] = curve_problems(over_naive)
    # 1.0 on 0.5 -> 2.0 is a third of the points.
    assert "earns 33 % of the performance points" in problem
    assert curve_problems(softmax) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_chapter_exercise_keeps_the_static_rule(slug: str) -> None:
    spec = load_exercise(CHAPTER / slug)
    assert curve_problems(spec) == []
    for device, curve in spec.scoring.curves.items():
        assert curve.measure == "relative_to_reference", device
        assert curve.full_at <= 1 / ladder_rules.REFERENCE_MARGIN


def test_validation_keeps_the_ladder_and_a_failed_ladder_withholds_the_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, softmax: ExerciseSpec
) -> None:
    from graders.authoring import validate

    monkeypatch.setenv("GRADERS_CACHE_DIR", str(tmp_path))
    spec = load_exercise(CHAPTER / "softmax")
    expectations = load_expectations(spec.path, spec.max_score)
    ladder = measured_ladder(spec, "cpu", {"reference": graded(1.0, 10), "naive": graded(0.95, 10)})
    assert ladder is not None
    problems = ladder_problems(spec, ladder, expectations)
    assert problems and problems[0].startswith("ladder: the naive version earns 4.0 of 4")
    for mode, failed in (("quick", False), ("perf", True)):
        record = validate.ExerciseResult(
            str(spec.path),
            spec.slug,
            spec.content_hash,
            mode,
            "cpu",
            problems=problems if failed else [],
            ladder=ladder if mode == "perf" else None,
            ladder_failed=failed,
        )
        validate.store_result(record)
    assert validate.validation_status(spec) == "failed"
    assert validate.latest_ladder(spec) == json.loads(json.dumps(ladder))
    assert validate.latest_ladder(spec, "cuda") is None


def test_quick_validation_refuses_a_curve_against_the_rule_before_grading_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graders.authoring.validate import validate_exercise

    monkeypatch.setenv("GRADERS_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "softmax"
    shutil.copytree(CHAPTER / "softmax", folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "exercise.toml"
    text = toml.read_text()
    cpu_curve = text[text.index("[scoring.curve.cpu]") : text.index("[scoring.curve.cuda]")]
    toml.write_text(
        text.replace(
            cpu_curve,
            '[scoring.curve.cpu]\nmeasure = "relative_to_reference"\nfull_at = 0.97\n'
            "zero_at = 0.4\n\n",
        )
    )
    result = validate_exercise(folder, use_cache=False)
    assert not result.passed and result.gradings == {}  # refused before any grading ran
    [problem] = result.problems
    assert "field 'scoring.curve.cpu.full_at'" in problem and "0.91 or below" in problem
