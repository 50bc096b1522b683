"""Every hostile case through the real sandbox, each followed by an honest grading.

A case passes when its report has the verdict, performance points, message, flags and stdout
its TOML header states, the grading raised no GraderError (a grader failure caused by a
submission costs the student nothing, so it is a failed test), and an honest vector-add
grading right after it in the same process is still ``correct`` with no tamper flags (a case
must leave nothing behind). No timing is asserted. See tests/hostile/corpus.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graders import ExerciseSpec

from .corpus import (
    _TIMED,
    Case,
    Exercises,
    Outcome,
    grade_case,
    grade_honest,
    judge,
    load_case,
    load_cases,
)

CASES = load_cases()


@pytest.fixture(scope="module")
def exercises(tmp_path_factory: pytest.TempPathFactory) -> Exercises:
    return Exercises(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_case(case: Case, exercises: Exercises) -> None:
    outcome = grade_case(case, exercises)
    honest = grade_honest(exercises)
    assert outcome.report is not None, f"GraderError caused by a submission: {outcome.grader_error}"
    assert not outcome.problems, outcome.problems
    assert not honest, honest


def test_every_class_has_two_attacks() -> None:
    classes: dict[str, int] = {}
    for case in CASES:
        classes[case.klass] = classes.get(case.klass, 0) + 1
    assert len(classes) >= 11, sorted(classes)
    assert all(count >= 2 for count in classes.values()), classes


@pytest.mark.parametrize("name", sorted(_TIMED))
def test_every_quick_copy_loads(name: str, tmp_path: Path) -> None:
    """Each quick copy's edits still match its exercise.toml (no sandbox: fast)."""
    spec = Exercises(tmp_path).get(name)
    assert isinstance(spec, ExerciseSpec)
    assert spec.limits.setup_s == 20


def test_case_keys_are_read_and_judged(tmp_path: Path) -> None:
    folder = tmp_path / "self_disturbed"
    folder.mkdir()
    path = folder / "probe.py"
    path.write_text(
        '"""\nclass = "self_disturbed"\nattack = "probe"\nverdict = "correct"\npoints = 0\n'
        'exercise = "layernorm"\ncompare = true\nprofile = true\nwarm = true\n"""\n'
    )
    case = load_case(path)
    assert (case.compare, case.profile, case.warm) == (True, True, True)
    assert case.expected() == "correct/0 (warm, after another student)"
    report = {"verdict": "correct", "message": None, "performance": {"points": 1.5}}
    assert judge(case, Outcome(report, None, 1.0)) == ["1.5 performance points, expected 0"]
    report["performance"] = {"points": 0.0}
    assert judge(case, Outcome(report, None, 1.0)) == []
