"""The chapter 15 fusion notebook: its own solution passes, the blank release does not, and an
answer that is not fused (eager PyTorch runs one pass per operator) loses the fusion points."""

from __future__ import annotations

import json

import nbformat
import pytest

from graders.notebooks import NotebookExerciseSpec, load_notebook_exercise

from .conftest import REPO, cell, solved_release, student_visible

FUSION = REPO / "exercises" / "ch15" / "fusion-notebook"

# The old solution: one expression, still three eager operators over whole tensors.
ONE_EXPRESSION = """def fused_block(x, bias, residual):
    return F.gelu(x + bias) + residual
"""
# One full-size tensor, reused in place: no extra allocation, but still three passes.
IN_PLACE = """def fused_block(x, bias, residual):
    out = x + bias
    torch.ops.aten.gelu_(out)
    return out.add_(residual)
"""
# Blocked another way than the solution: split views and a copy into each output block.
SPLIT_BLOCKS = """def fused_block(x, bias, residual):
    width = x.shape[-1]
    rows = max(1, MAX_BLOCK // width)
    out = torch.empty_like(x)
    pieces = zip(x.reshape(-1, width).split(rows), residual.reshape(-1, width).split(rows),
                 out.view(-1, width).split(rows))
    for xs, rs, outs in pieces:
        outs.copy_(F.gelu(xs + bias) + rs)
    return out
"""


@pytest.fixture(scope="module")
def fusion() -> NotebookExerciseSpec:
    return load_notebook_exercise(FUSION)


def with_fused(spec: NotebookExerciseSpec, source: str) -> bytes:
    """The solved release with ``source`` as the answer to task 3."""
    nb = nbformat.reads(solved_release(spec).decode(), as_version=4)
    (answer,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "fused"]
    answer.source = source
    return nbformat.writes(nb).encode()


def test_solution_scores_all_autograded_points_and_waits_for_a_person(graded, fusion) -> None:
    report = graded(solved_release(fusion), fusion)
    assert report["verdict"] == "correct", report["message"]
    autograded = [c for c in report["cells"] if c["kind"] == "autograded_test"]
    assert report["score"] == sum(c["max_score"] for c in autograded) == 6
    assert report["max_score"] == 9
    assert report["needs_manual_grade"] is True
    assert cell(report, "explain")["needs_manual_grade"] is True
    assert "fused_block matches unfused_block" in cell(report, "test-fused")["output"]
    assert cell(report, "test-fused-hidden")["passed"] is True
    assert "7 / 3" not in student_visible(report)


def test_blank_release_scores_nothing(graded, fusion) -> None:
    report = graded(fusion.release, fusion)
    assert report["verdict"] == "wrong"
    assert report["score"] == 0
    assert report["needs_manual_grade"] is False  # the explanation was left as released
    assert "NotImplementedError" in cell(report, "test-fused")["output"]


@pytest.mark.parametrize("source", [ONE_EXPRESSION, IN_PLACE], ids=["one-expression", "in-place"])
def test_an_unfused_answer_loses_the_fusion_points(graded, fusion, source: str) -> None:
    report = graded(with_fused(fusion, source), fusion)
    assert report["verdict"] == "wrong"
    # Its values are right, so the value test passes; the one-pass test does not.
    assert cell(report, "test-fused")["passed"] is True
    assert cell(report, "test-fused-hidden")["passed"] is False
    assert report["score"] == 6 - cell(report, "test-fused-hidden")["max_score"] == 4


def test_a_blocked_answer_written_another_way_scores_full_marks(graded, fusion) -> None:
    report = graded(with_fused(fusion, SPLIT_BLOCKS), fusion)
    assert report["verdict"] == "correct", report["message"]
    assert report["score"] == 6


def test_task_3_says_eager_pytorch_does_not_fuse(fusion) -> None:
    source = nbformat.read(fusion.source_path, as_version=4)
    task = next(c.source for c in source.cells if c.metadata.nbgrader["grade_id"] == "task-fuse")
    assert "no named intermediates" not in task
    assert "Eager PyTorch runs" in task and "fuses nothing" in task
    assert "eager 模式" in task and "不会融合" in task
    # The released answer cell keeps the function to fill in.
    release = nbformat.reads(fusion.release.decode(), as_version=4)
    answer = next(c.source for c in release.cells if c.metadata.nbgrader["grade_id"] == "fused")
    assert answer.startswith("def fused_block(x, bias, residual):")
    assert "raise NotImplementedError()" in answer


def test_the_notebook_uses_the_courses_terms() -> None:
    text = json.dumps(json.loads((FUSION / "fusion.ipynb").read_text()), ensure_ascii=False)
    assert "屋顶线" not in text and "核函数" not in text
    assert "Roofline 模型" in text


def test_the_visible_tests_do_not_give_the_answers_away(fusion) -> None:
    # The released test cells are what a student reads: they check the type and the sense of
    # an answer, and the hidden part (stripped from the release) checks its value.
    release = nbformat.reads(fusion.release.decode(), as_version=4)
    visible = {
        c.metadata.nbgrader["grade_id"]: c.source
        for c in release.cells
        if c.metadata.get("nbgrader", {}).get("grade")
        and c.metadata.nbgrader["grade_id"].startswith("test-")
    }
    assert "3" not in visible["test-ops-per-call"]  # computed from a profile, never written
    assert "7 / 3" not in visible["test-traffic"]


def test_task_2_separates_what_the_profile_shows_from_what_is_reasoned(fusion) -> None:
    source = nbformat.read(fusion.source_path, as_version=4)
    task = next(c.source for c in source.cells if c.metadata.nbgrader["grade_id"] == "task-explain")
    assert "*shows*" in task and "*reason*" in task and "cannot show it by itself" in task
    assert "*显示*" in task and "*推断*" in task and "单看耗时表是看不出来的" in task
    # The TA's rubric grades the same two parts.
    assert "Memory bound, reasoned" in fusion.rubrics["explain"]["en"]
    assert "推断出受限于内存" in fusion.rubrics["explain"]["zh"]


def test_the_validator_grades_the_samples_and_tells_numpy_from_torch() -> None:
    # samples/numpy_fused.ipynb computes the right values with numpy: every check but the
    # hidden one that counts the elements torch's GELU produced passes it.
    from graders.authoring.validate import validate_path

    (result,) = validate_path(FUSION)
    assert result.passed, result.problems
    assert result.gradings["solution"]["verdict"] == "correct"
    assert result.gradings["solution"]["score"] == 6.0
    assert result.gradings["numpy_fused"]["verdict"] == "wrong"
    assert result.gradings["numpy_fused"]["score"] == 4.0
