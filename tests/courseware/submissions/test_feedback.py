"""Feedback that teaches: it cites the report's own figures and a next step fitting the sample.

The reports are real gradings of each exercise's samples, recorded once by
scripts/record_sample_reports.py (grading them here would take minutes).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from django.utils import translation

from courseware.submissions import readable_units as units
from courseware.submissions.feedback import feedback_for, passes_over_memory
from graders.report.schema import upgrade

SAMPLE_REPORTS = Path(__file__).resolve().parent / "sample_reports"
EXERCISES = sorted(p.name for p in SAMPLE_REPORTS.iterdir() if p.is_dir())
SAMPLES = ("fast", "slow", "naive", "wrong")


def load(exercise: str, sample: str) -> dict[str, Any]:
    return json.loads((SAMPLE_REPORTS / exercise / f"{sample}.json").read_text(encoding="utf-8"))


def figures_cited(report: dict[str, Any]) -> list[str]:
    """Figures formatted from this report that its feedback must contain."""
    if report["verdict"] == "wrong":
        correctness = report["correctness"]
        index = ", ".join(str(i) for i in correctness["first_mismatch"]["index"])
        return [units.percent(correctness["mismatch_fraction"]), f"({index})"]
    perf = report["performance"]
    cited = [units.duration(perf["median_s"]), units.ratio(perf["speedup_vs_naive"])]
    if perf["roof"] == "memory":
        cited += [units.bandwidth(perf["achieved_gbps"]), units.percent(perf["fraction_of_peak"])]
    else:
        cited += [units.percent(perf["fraction_of_peak_flops"])]
    return cited


def test_every_code_exercise_has_its_samples_recorded() -> None:
    assert len(EXERCISES) >= 5
    for exercise in EXERCISES:
        for sample in SAMPLES:
            assert (SAMPLE_REPORTS / exercise / f"{sample}.json").is_file(), (exercise, sample)


@pytest.mark.parametrize("exercise", EXERCISES)
def test_feedback_cites_each_samples_figures_and_a_different_next_step(exercise: str) -> None:
    with translation.override("en"):
        steps = {}
        for sample in SAMPLES:
            report = load(exercise, sample)
            before = copy.deepcopy(report)
            feedback = feedback_for(report, is_naive_source=sample == "naive")
            assert feedback is not None
            text = " ".join(feedback.findings)
            for figure in figures_cited(report):
                assert figure in text, (exercise, sample, figure, text)
            assert feedback.next_step.startswith("Next step:")
            assert report == before, "feedback never changes the report (or its score)"
            steps[sample] = feedback.next_step
    assert len(set(steps.values())) == len(SAMPLES), steps


@pytest.mark.parametrize("exercise", EXERCISES)
def test_a_correct_samples_feedback_counts_its_operator_calls(exercise: str) -> None:
    report = load(exercise, "naive")
    with translation.override("en"):
        feedback = feedback_for(report, is_naive_source=True)
    assert feedback is not None and feedback.kind == "naive_itself"
    assert any("operator call" in finding for finding in feedback.findings)


def test_a_slow_memory_bound_call_is_read_as_passes_over_the_data() -> None:
    report = load("gelu-residual", "naive")
    passes = passes_over_memory(report["performance"])
    assert passes is not None and passes > 2
    with translation.override("en"):
        feedback = feedback_for(report)
    assert feedback is not None
    assert any(units.data_size(report["performance"]["bytes"]) in f for f in feedback.findings)


def test_feedback_is_translated() -> None:
    with translation.override("zh-hans"):
        feedback = feedback_for(load("vector-add", "wrong"))
    assert feedback is not None
    assert feedback.next_step.startswith("下一步")


def test_an_old_report_without_profile_or_figures_gets_plain_feedback() -> None:
    old = upgrade({"verdict": "correct", "score": 6.0, "max_score": 10.0, "gradable": True})
    with translation.override("en"):
        feedback = feedback_for(old)
    assert feedback is not None and feedback.kind == "untimed"
    assert feedback.findings == [] and "not timed" in feedback.next_step
    timed = upgrade(
        {
            "verdict": "correct",
            "score": 7.0,
            "max_score": 10.0,
            "performance": {"median_s": 0.0204, "achieved_gbps": 16.8, "roof": "memory"},
        }
    )
    with translation.override("en"):
        feedback = feedback_for(timed)
    assert feedback is not None
    assert "20.4 ms" in feedback.findings[0] and "16.8 GB/s" in feedback.findings[0]


def test_a_wrong_result_that_is_nan_says_where_nans_come_from() -> None:
    report = upgrade(
        {
            "verdict": "wrong",
            "correctness": {
                "passed": False,
                "trials": 1,
                "max_abs_err": "nan",
                "max_rel_err": "nan",
                "mismatch_fraction": 1.0,
                "first_mismatch": {"index": [0, 3], "got": "nan", "expected": 0.31},
            },
        }
    )
    with translation.override("en"):
        feedback = feedback_for(report)
    assert feedback is not None and "division by zero" in feedback.next_step
    assert "(0, 3)" in " ".join(feedback.findings)


def test_notebooks_and_grader_failures_get_no_feedback() -> None:
    assert feedback_for({"verdict": "correct", "cells": [{"grade_id": "a"}]}) is None
    assert feedback_for(upgrade({"verdict": None, "flags": ["grader_error"]})) is None
