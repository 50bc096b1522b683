"""The chapter 15 fusion notebook: its own solution passes, the blank release does not."""

from __future__ import annotations

import nbformat
import pytest

from graders.notebooks import NotebookExerciseSpec, load_notebook_exercise

from .conftest import REPO, cell, student_visible

FUSION = REPO / "exercises" / "ch15" / "fusion-notebook"


@pytest.fixture(scope="module")
def fusion() -> NotebookExerciseSpec:
    return load_notebook_exercise(FUSION)


def _solved(spec: NotebookExerciseSpec) -> bytes:
    """The release with the source's solution cells copied in, as a student would."""
    source = nbformat.read(spec.source_path, as_version=4)
    answers = {
        c.metadata.nbgrader["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    release = nbformat.reads(spec.release.decode(), as_version=4)
    for c in release.cells:
        grade_id = c.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            c.source = (
                answers[grade_id]
                .replace("### BEGIN SOLUTION\n", "")
                .replace("### END SOLUTION", "")
            )
    return nbformat.writes(release).encode()


def test_solution_scores_all_autograded_points_and_waits_for_a_person(graded, fusion) -> None:
    report = graded(_solved(fusion), fusion)
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
