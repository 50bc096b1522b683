"""The report's types, its generated JSON schema, and reports stored by earlier versions."""

from __future__ import annotations

from typing import Any

import pytest

from graders.report import build as report
from graders.report import schema as report_schema


def test_the_committed_schema_is_the_one_the_types_generate() -> None:
    committed = report_schema.SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == report_schema.render(), (
        "graders/report/report.schema.json is stale: run `python -m graders.report.schema`"
    )


def test_the_schema_states_what_the_types_require() -> None:
    schema = report_schema.generate()
    assert "verdict" in schema["required"] and "cells" not in schema["required"]
    performance = schema["properties"]["performance"]
    assert performance["type"] == ["object", "null"]
    assert performance["properties"]["runs"] == {"type": "integer", "minimum": 1}
    assert schema["properties"]["verdict"]["enum"][-1] is None  # grader failures


def test_a_grader_failure_is_a_valid_report_that_earns_nothing() -> None:
    failed = report.grader_failure(
        exercise="vector-add", max_score=10, device="cpu", message="m", internal_error="trace"
    )
    assert report_schema.validate(failed) == []
    assert failed["gradable"] is False and failed["verdict"] is None
    assert failed["internal_error"] == "trace"


# What earlier versions stored (taken from their code): the first grader-failure record, a
# code report whose timings held a companion's failure, and a notebook report.
LEGACY: dict[str, dict[str, Any]] = {
    "failure": {
        "verdict": None,
        "gradable": False,
        "message": "The grader failed on our side; this costs you nothing.",
        "internal_error": "Traceback ...",
    },
    "code": {
        "exercise": "vector-add",
        "exercise_hash": "abc",
        "verdict": "correct",
        "message": None,
        "gradable": True,
        "score": 9.2,
        "max_score": 10,
        "flags": [],
        "correctness": {
            "passed": True,
            "trials": 3,
            "max_abs_err": 0.0,
            "max_rel_err": 0.0,
            "mismatch_fraction": 0.0,
            "first_mismatch": None,
        },
        "performance": {
            "median_s": 0.01,
            "iqr_s": 0.001,
            "cv": 0.02,
            "runs": 7,
            "bytes": 1.0e8,
            "flops": 1.0e7,
            "achieved_gbps": 10.0,
            "achieved_flops_per_s": 1e9,
            "peak_gbps": 20.0,
            "fraction_of_peak": 0.5,
            "arithmetic_intensity": 0.1,
            "roofline_bound_s": 0.005,
            "roof": "memory",
            "fraction_of_roofline": 0.5,
            "speedup_vs_naive": None,
            "relative_to_reference": None,
            "points": 3.2,
            "measure": "fraction_of_peak_bandwidth",
        },
        "peak": {"gbps": 20.0, "flops_per_s": 1e11, "method": "copy", "datasheet_gbps": None},
        "profile": [{"name": "aten::add", "calls": 1, "self_time_s": 0.01}],
        "device": {"kind": "cpu", "name": "Intel Xeon"},
        "timings": {
            "sandbox_start_s": 1.0,
            "setup_s": 0.1,
            "check_s": 0.2,
            "timing_s": 3.0,
            "total_s": 5.0,
            "reference_error": "the sandbox did not start",
        },
        "stderr": None,
        "stdout": None,
        "traceback": None,
    },
    "notebook": {
        "exercise": "fusion-notebook",
        "exercise_hash": "def",
        "kind": "notebook",
        "verdict": "wrong",
        "message": "1 of 2 autograded test cells passed.",
        "gradable": True,
        "score": 2.0,
        "max_score": 6.0,
        "needs_manual_grade": True,
        "cells": [
            {
                "grade_id": "explain",
                "kind": "manual",
                "score": 0.0,
                "max_score": 2.0,
                "needs_manual_grade": True,
                "hidden_tests": False,
                "passed": None,
                "output": None,
            }
        ],
        "flags": [],
        "correctness": None,
        "performance": None,
        "peak": None,
        "profile": None,
        "device": {"kind": "cpu", "name": None},
        "timings": {"sandbox_start_s": 1.0, "total_s": 9.0, "run_s": 7.5},
        "stderr": None,
        "stdout": None,
        "traceback": None,
    },
}


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_reports_stored_by_earlier_versions_validate_once_upgraded(name: str) -> None:
    stored = LEGACY[name]
    upgraded = report_schema.upgrade(stored, exercise="vector-add", max_score=10)
    assert report_schema.validate(upgraded) == []
    as_stored: dict[str, Any] = dict(upgraded)
    for key, value in stored.items():  # nothing stored is lost or changed but the timings
        if key not in ("timings", "performance"):
            assert as_stored[key] == value


def test_a_companion_failure_kept_among_old_timings_moves_to_its_own_field() -> None:
    upgraded = report_schema.upgrade(LEGACY["code"])
    assert upgraded["companion_errors"] == {"reference": "the sandbox did not start"}
    assert "reference_error" not in upgraded["timings"]
    assert upgraded["timings"]["total_s"] == 5.0


def test_the_validator_refuses_what_the_schema_forbids() -> None:
    good = report_schema.upgrade(LEGACY["code"])
    assert report_schema.validate({**good, "score": -1})
    assert report_schema.validate({**good, "gradable": "yes"})
    assert report_schema.validate({**good, "companion_errors": {"reference": 3}})
