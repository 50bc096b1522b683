"""Every kind of content file reports a mistake the same way: a SpecError saying
"<file>: field '<dotted.key>': <problem>"."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

from courseware.quizzes.spec import load_quiz
from graders.authoring.kernelbench import read_problem
from graders.errors import SpecError
from graders.notebooks.spec import load_notebook_exercise
from graders.spec.exercise import load_exercise

REPO = Path(__file__).resolve().parents[2]
CH15 = REPO / "exercises" / "ch15"
PROBLEMS = Path(__file__).resolve().parent / "authoring" / "kernelbench" / "problems"


def _copy(name: str, target: Path) -> Path:
    folder = target / "ch15" / name
    shutil.copytree(CH15 / name, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _edit(file: Path, old: str, new: str) -> Path:
    text = file.read_text(encoding="utf-8")
    assert old in text, (file, old)
    file.write_text(text.replace(old, new, 1), encoding="utf-8")
    return file


def _error(load: Callable[[], object]) -> SpecError:
    try:
        load()
    except SpecError as exc:
        return exc
    raise AssertionError("no SpecError")


def test_every_content_error_has_one_type_and_one_form(tmp_path: Path) -> None:
    exercise = _copy("vector-add", tmp_path / "exercise")
    exercise_toml = _edit(
        exercise / "exercise.toml", "correctness_points = 6", "correctness_points = true"
    )

    notebook = _copy("fusion-notebook", tmp_path / "notebook")
    notebook_toml = _edit(notebook / "notebook.toml", "cell_s = 60", 'cell_s = "60"')

    quiz = _copy("quiz", tmp_path / "quiz")
    question = sorted((quiz / "questions").glob("*.toml"))[0]
    question_text = question.read_text(encoding="utf-8")
    question.write_text(
        re.sub(r'^type = "\w+"', 'type = "essay"', question_text, count=1, flags=re.M),
        encoding="utf-8",
    )

    problem = tmp_path / "problem.py"
    problem.write_text(
        (PROBLEMS / "relu.py").read_text().replace("torch.rand(batch_size, dim)", "make()")
    )

    cases = [
        (exercise_toml, "scoring.correctness_points", lambda: load_exercise(exercise)),
        (notebook_toml, "limits.cell_s", lambda: load_notebook_exercise(notebook)),
        (question, "type", lambda: load_quiz(quiz)),
        (problem, "get_inputs[0]", lambda: read_problem(problem)),
    ]
    for file, field, load in cases:
        error = _error(load)
        assert type(error) is SpecError, type(error)
        message = str(error)
        match = re.fullmatch(r"(.+?): field '([^']+)': (.+)", message, flags=re.S)
        assert match is not None, message
        assert match.group(1) == str(file), message
        assert match.group(2) == field, message
        assert match.group(3).strip(), message
