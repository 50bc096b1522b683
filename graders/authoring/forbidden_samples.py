"""The validator's side of ``[rules] forbid``: samples say what a grading must find.

A sample's table in ``samples/expected.toml`` may say ``forbidden = "softmax"``: its grading
must be correct and must name that rule (graders/grading/forbidden_ops.py). A correct sample
without the key must run nothing forbidden, so a rule that catches honest code fails the
validation too. The exercise's reference and naive versions are graded with the rule off
(:func:`exempt`): it binds students, and the ladder is measured against the reference as is.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from graders.authoring.meta import SampleExpectation
from graders.spec.exercise import ExerciseSpec


def exempt(spec: ExerciseSpec) -> ExerciseSpec:
    """``spec`` with no operator forbidden: how its reference and naive version are graded."""
    return dataclasses.replace(spec, forbid=())


def forbidden_problems(
    spec: ExerciseSpec, sample: SampleExpectation, report: dict[str, Any], expected_toml: Path
) -> list[str]:
    """What a sample's ``forbidden`` expectation and its grading disagree on."""
    where = f"{expected_toml}: field '{sample.where}.forbidden'"
    if sample.forbidden is not None and sample.forbidden not in spec.forbid:
        return [f"{where}: {sample.forbidden!r} is not in exercise.toml's [rules] forbid"]
    found = (report.get("forbidden") or {}).get("rules", [])
    if report["verdict"] != "correct" or (sample.forbidden is None and not found):
        return []
    if sample.forbidden is None:
        operators = ", ".join(report["forbidden"]["operators"])
        return [f"{where}: missing, but the grading found forbidden operators ({operators})"]
    if sample.forbidden not in found:
        return [f"{where}: expected the grading to find {sample.forbidden!r}; it found {found}"]
    return []
