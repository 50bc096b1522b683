"""The chapter 15 fusion notebook: its own solution passes, the blank release does not."""

from __future__ import annotations

import pytest

from graders.notebooks import NotebookExerciseSpec, load_notebook_exercise

from .conftest import REPO, cell, solved_release, student_visible

FUSION = REPO / "exercises" / "ch15" / "fusion-notebook"


@pytest.fixture(scope="module")
def fusion() -> NotebookExerciseSpec:
    return load_notebook_exercise(FUSION)


def test_solution_scores_all_autograded_points_and_waits_for_a_person(graded, fusion) -> None:
    report = graded(solved_release(fusion), fusion)
    assert report["verdict"] == "correct", report["message"]
    autograded = [c for c in report["cells"] if c["kind"] == "autograded_test"]
    assert report["score"] == sum(c["max_score"] for c in autograded) == 6
    assert report["max_score"] == 9
    assert report["needs_manual_grade"] is True
    assert cell(report, "explain")["needs_manual_grade"] is True
    assert "fused_block matches unfused_block" in cell(report, "test-fused")["output"]
    assert "7 / 3" not in student_visible(report)


def test_blank_release_scores_nothing(graded, fusion) -> None:
    report = graded(fusion.release, fusion)
    assert report["verdict"] == "wrong"
    assert report["score"] == 0
    assert report["needs_manual_grade"] is False  # the explanation was left as released
    assert "NotImplementedError" in cell(report, "test-fused")["output"]
