"""Every hostile case through the real sandbox, each followed by an honest grading.

A case passes when its report has the verdict, performance points, message, flags and stdout
its TOML header states, the grading raised no GraderError (a grader failure caused by a
submission costs the student nothing, so it is a failed test), and an honest vector-add
grading right after it in the same process is still ``correct`` with no tamper flags (a case
must leave nothing behind). No timing is asserted. See tests/hostile/corpus.py.
"""

from __future__ import annotations

import pytest

from .corpus import Case, Exercises, grade_case, grade_honest, load_cases

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
