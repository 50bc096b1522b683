"""Verdicts for ordinary, broken and runaway submissions."""

from __future__ import annotations

import json

from graders.report import schema as report_schema

from .conftest import CORRECT, WRONG, cell, fill


def test_correct_submission_scores_every_autograded_point(graded, tiny_spec) -> None:
    report = graded(fill(tiny_spec, CORRECT, why="Because addition."))
    assert report["verdict"] == "correct"
    assert report["score"] == 6 and report["max_score"] == 7
    assert report["needs_manual_grade"] is True
    assert cell(report, "why") == {
        "grade_id": "why", "kind": "manual", "score": 0, "max_score": 1.0,
        "needs_manual_grade": True, "hidden_tests": False, "passed": None, "output": None,
    }  # fmt: skip
    assert cell(report, "test-add")["output"] == "add works\n"
    assert report_schema.validate(report) == []  # the code exercises' envelope


def test_wrong_submission_fails_the_tests_and_shows_visible_errors(graded, tiny_spec) -> None:
    report = graded(fill(tiny_spec, WRONG))
    assert report["verdict"] == "wrong"
    assert report["score"] == 0
    assert report["needs_manual_grade"] is False  # the answer was left as released
    assert "add(1, 2) should be 3" in cell(report, "test-add")["output"]
    assert cell(report, "test-hidden")["output"] == "failed"


def test_not_a_notebook_is_rejected(graded, tiny_spec) -> None:
    for junk in (b"def add(a, b): return a + b\n", b'{"cells": 3}', b"\xff\xfe\x00"):
        report = graded(junk)
        assert report["verdict"] == "rejected", junk
        assert report["gradable"] is False
        assert "not a" in report["message"]


def test_oversized_notebook_is_rejected(graded, tiny_spec) -> None:
    padding = "# " + "x" * (tiny_spec.limits.submission_kb * 1024)
    report = graded(fill(tiny_spec, CORRECT + "\n" + padding))
    assert report["verdict"] == "rejected"
    assert "limit" in report["message"]


def test_timeout_keeps_the_scores_so_far(graded, tiny_spec) -> None:
    report = graded(fill(tiny_spec, CORRECT, after={"test-add": ["while True:\n    pass"]}))
    assert report["verdict"] == "timeout"
    assert "4 s limit per cell" in report["message"]
    assert cell(report, "test-add")["score"] == 2
    assert cell(report, "test-hidden")["score"] == 0
    assert cell(report, "test-hidden")["output"].startswith("not run")
    assert report["score"] == 2


def test_kernel_death_keeps_the_scores_so_far(graded, tiny_spec) -> None:
    report = graded(fill(tiny_spec, CORRECT, after={"test-add": ["import os\nos._exit(3)"]}))
    assert report["verdict"] == "error"
    assert "kernel died" in report["message"] and "status 3" in report["message"]
    assert report["score"] == 2


def test_endless_output_is_stopped(graded, tiny_spec) -> None:
    endless = "while True:\n    print('spam ' * 200)"
    report = graded(fill(tiny_spec, CORRECT, after={"test-add": [endless]}))
    assert report["verdict"] == "error"
    assert "printed more than 256 KiB" in report["message"]
    assert report["score"] == 2
    assert report["timings"]["total_s"] < 30


def test_output_shown_is_capped(graded, tiny_spec) -> None:
    chatty = CORRECT.replace("return", "print('z' * 50000)\n    return")
    report = graded(fill(tiny_spec, chatty))
    assert report["verdict"] == "correct"
    output = cell(report, "test-add")["output"]
    assert len(output) < 5000
    assert "not kept" in output


def test_report_is_json(graded, tiny_spec) -> None:
    json.dumps(graded(fill(tiny_spec, CORRECT)))
