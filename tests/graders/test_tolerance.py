"""Tolerances that scale with the values (issue 38, class 2): small values compared relatively.

softmax's timed logits have a standard deviation of 25, so 99.7 % of its probabilities are
below atol (1e-6): under a plain allclose an output that is 0 in most positions passed. With
``small_rtol`` the absolute allowance is at most that share of the value itself. These tests
check the rule, its parsing, that honest float32 routes to softmax still pass it and a
kernel that leaves small probabilities at 0 does not, the validator's guard, and one grading
of each kind through the real sandbox.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from graders import SpecError, grade, load_exercise
from graders.authoring import structure
from graders.authoring.validate import quick_spec
from graders.grading import correctness, trusted_code
from graders.grading.correctness import compare, tolerance_for
from graders.harness import inputs as harness_inputs
from graders.spec.exercise import ExerciseSpec, Tolerance
from graders.spec.layouts import input_layout

from .conftest import REPO

CH15 = REPO / "exercises" / "ch15"
SOFTMAX = CH15 / "softmax"
HOSTILE = REPO / "tests" / "hostile" / "cases" / "small_values"
ALLCLOSE = Tolerance(1e-6, 1e-5)
RELATIVE = Tolerance(1e-6, 1e-5, 1e-2)
TINY = torch.finfo(torch.float32).tiny


# ------------------------------------------------------------------ the rule itself


def test_a_small_value_left_at_zero_is_wrong_only_when_compared_relatively() -> None:
    expected = torch.tensor([0.5, 3e-9, 1e-20, 2e-30])
    got = expected.clone()
    got[1:] = 0.0
    assert compare(got, expected, ALLCLOSE).passed  # the hole: all far below atol
    result = compare(got, expected, RELATIVE)
    assert not result.passed
    assert result.mismatch_fraction == pytest.approx(3 / 4)
    assert result.first_mismatch == {"index": [1], "got": 0.0, "expected": pytest.approx(3e-9)}


def test_small_values_within_small_rtol_of_themselves_pass() -> None:
    expected = torch.tensor([3e-9, 1e-20, 2e-30], dtype=torch.float64)
    assert compare(expected * (1 + 0.9e-2), expected, RELATIVE).passed
    assert not compare(expected * (1 + 1.1e-2), expected, RELATIVE).passed


def test_values_too_small_for_a_normal_float_may_be_flushed_to_zero() -> None:
    # GPUs flush subnormal results to 0 (ex2.approx.ftz): an honest kernel may.
    expected = torch.tensor([0.25, TINY / 2, TINY / 1000])
    got = torch.tensor([0.25, 0.0, 0.0])
    assert compare(got, expected, RELATIVE).passed
    # From the smallest normal number up, a value counts (an eighth above it: beyond the
    # floor plus 1 %).
    expected = torch.tensor([0.25, TINY * 1.125])
    assert not compare(torch.tensor([0.25, 0.0]), expected, RELATIVE).passed


def test_large_values_are_judged_as_allclose_judges_them() -> None:
    # From atol / small_rtol (1e-4) up, the allowance is atol + rtol * |e| exactly.
    expected = torch.tensor([1e-4, 0.5, 1.0], dtype=torch.float64)
    allowed = ALLCLOSE.atol + ALLCLOSE.rtol * expected
    inside, outside = expected + 0.99 * allowed, expected + 1.01 * allowed
    for got in (inside, outside):
        assert compare(got, expected, RELATIVE).passed == compare(got, expected, ALLCLOSE).passed
    assert compare(inside, expected, RELATIVE).passed
    assert not compare(outside, expected, RELATIVE).passed


def test_the_message_says_that_small_values_count() -> None:
    expected = torch.tensor([0.9, 1e-12])
    result = compare(torch.tensor([0.9, 0.0]), expected, RELATIVE)
    assert result.message is not None
    assert "values below 0.0001 within 1% of themselves" in result.message
    assert "compared relative to themselves" in result.message
    # A value that is merely off (not left at 0) gets no such hint.
    result = compare(torch.tensor([0.9, 2e-12]), expected, RELATIVE)
    assert result.message is not None and "left at 0" not in result.message
    # Nor does a tolerance without small_rtol.
    result = compare(torch.tensor([0.0, 1e-12]), expected, ALLCLOSE)
    assert result.message is not None and "relative to themselves" not in result.message


def test_the_default_tolerances_stay_allclose() -> None:
    assert all(t.small_rtol is None for t in correctness.DEFAULT_TOLERANCE.values())


# ------------------------------------------------------------------ exercise.toml


def _softmax_copy(tmp_path: Path, line: str) -> Path:
    folder = tmp_path / "ch15" / "softmax"
    shutil.copytree(SOFTMAX, folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "exercise.toml"
    text, count = re.subn(r"float32 = \{ atol = [^}]*\}", line, toml.read_text())
    assert count == 1
    toml.write_text(text)
    return folder


def test_softmax_compares_its_small_probabilities_relatively() -> None:
    tol = load_exercise(SOFTMAX).tolerance["float32"]
    assert tol == Tolerance(1e-6, 1e-5, 1e-2)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("float32 = { atol = 1e-6, rtol = 1e-5, small_rtol = 0 }", "must be > 0"),
        ("float32 = { atol = 1e-6, rtol = 0.5, small_rtol = 0.5 }", "must be < 1"),
        ("float32 = { atol = -1e-6, rtol = 1e-5 }", "must be >= 0"),
        ("float32 = { atol = 1e-6, rtol = 1e-5, small = 1e-2 }", "field 'tolerance.float32.small'"),
    ],
)
def test_a_bad_tolerance_is_refused_with_its_field(tmp_path: Path, line: str, words: str) -> None:
    with pytest.raises(SpecError, match=re.escape(words)):
        load_exercise(_softmax_copy(tmp_path, line))


# ------------------------------------------------------------------ softmax's routes

LOG2E = 1.4426950408889634


def _max_shift(x: torch.Tensor) -> torch.Tensor:
    return x - x.amax(dim=-1, keepdim=True)


def _log_space(x: torch.Tensor) -> torch.Tensor:
    m = x.amax(dim=-1, keepdim=True)
    return (x - (m + (x - m).exp().sum(dim=-1, keepdim=True).log())).exp()


def _by_reciprocal(x: torch.Tensor) -> torch.Tensor:
    e = _max_shift(x).exp()
    return e * (1.0 / e.sum(dim=-1, keepdim=True))


def _blocks_rescaled(x: torch.Tensor, block: int = 256) -> torch.Tensor:
    """Flash-style: each block's exp against its own maximum, rescaled at the end."""
    rows = x.shape[0]
    m, s = torch.full((rows, 1), -math.inf), torch.zeros(rows, 1)
    parts = []
    for start in range(0, x.shape[1], block):
        piece = x[:, start : start + block]
        local = piece.amax(dim=-1, keepdim=True)
        e = (piece - local).exp()
        parts.append((local, e))
        new = torch.maximum(m, local)
        s = s * (m - new).exp() + e.sum(dim=-1, keepdim=True) * (local - new).exp()
        m = new
    return torch.cat([e * ((local - m).exp() / s) for local, e in parts], dim=-1)


def _exp2_of_scaled_logits(x: torch.Tensor) -> torch.Tensor:
    """Triton's flash-attention habit: log2(e) folded into the logits, then exp2."""
    e = torch.exp2(_max_shift(x * LOG2E))
    return e / e.sum(dim=-1, keepdim=True)


def _in_float64(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.double(), dim=-1).float()


HONEST: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "log_space": _log_space,
    "by_reciprocal": _by_reciprocal,
    "blocks_rescaled": _blocks_rescaled,
    "exp2_of_scaled_logits": _exp2_of_scaled_logits,
    "in_float64": _in_float64,
}


def _softmax_inputs(spec: ExerciseSpec) -> dict[str, torch.Tensor]:
    """The timed distribution (fewer rows), every check size and every check case."""
    timed = dict(spec.sizes["cpu"].timed, rows=256)
    sizes = {"timed": timed, **{f"check{i}": s for i, s in enumerate(spec.sizes["cpu"].check)}}
    inputs = {
        label: harness_inputs.make(input_layout(spec, size), 7, "cpu")[0]
        for label, size in sizes.items()
    }
    for case in spec.check_cases:
        layout = input_layout(spec, case.sizes["cpu"], case)
        inputs[case.name] = harness_inputs.make(layout, 7, "cpu")[0]
    return inputs


def test_honest_float32_softmax_routes_pass_and_zeros_for_small_ones_do_not() -> None:
    spec = load_exercise(SOFTMAX)
    tol = tolerance_for(torch.float32, spec.tolerance)
    reference = trusted_code.load(spec.reference_path, spec.entry, spec.content_hash)
    near_max = trusted_code.load(HOSTILE / "softmax_exp_near_max.py", spec.entry, "test")
    inputs = _softmax_inputs(spec)
    assert {"timed", "large_logits", "offset_logits", "negative_logits"} <= set(inputs)
    before = Tolerance(tol.atol, tol.rtol)  # the allclose softmax had
    for label, x in inputs.items():
        expected = reference(x.clone())
        for name, route in HONEST.items():
            got = route(x.clone())
            result = compare(got, expected, tol)
            # No verdict changes for honest code: what passed the allclose passes now. (The
            # log-space route misses large_logits under both, on probabilities near 1: with
            # logits of 1e4, m + log(sum) rounds away the sum in float32.)
            if label == "timed" or compare(got, expected, before).passed:
                assert result.passed, (name, label, result.message)
    expected = reference(inputs["timed"].clone())
    result = compare(near_max(inputs["timed"].clone()), expected, tol)
    assert not result.passed and (result.mismatch_fraction or 0) > 0.3
    # Under the allclose the exercise had, the same output passed: the hole this closes.
    assert compare(near_max(inputs["timed"].clone()), expected, ALLCLOSE).passed


# ------------------------------------------------------------------ the validator's guard


def test_the_validator_refuses_a_tolerance_that_zeros_pass_on_the_timed_inputs() -> None:
    spec = load_exercise(SOFTMAX)
    reference = trusted_code.load(spec.reference_path, spec.entry, spec.content_hash)
    assert structure.check_small_values(spec, reference) == []
    loose = dataclasses.replace(spec, tolerance={"float32": ALLCLOSE})
    (problem,) = structure.check_small_values(loose, reference)
    assert "field 'tolerance'" in problem and "small_rtol" in problem


@pytest.mark.parametrize(
    "slug", ["attention", "gelu-residual", "layernorm", "matmul", "vector-add"]
)
def test_no_other_exercise_lets_zeros_pass_on_its_timed_inputs(slug: str) -> None:
    spec = load_exercise(CH15 / slug)
    reference = trusted_code.load(spec.reference_path, spec.entry, spec.content_hash)
    assert structure.check_small_values(spec, reference) == []


def test_smallest_values_takes_a_share_of_the_normal_nonzero_ones() -> None:
    values = torch.tensor([0.0, TINY / 4, -5.0, 1e-3, -2e-3, 7.0, 1.0, 0.5, 0.25, 0.1] * 10)
    smallest = structure.smallest_values(values, 0.25)
    assert smallest is not None and smallest.numel() == 20  # a quarter of the 80 normal ones
    assert sorted(set(smallest.abs().tolist())) == pytest.approx([1e-3, 2e-3])
    assert structure.smallest_values(torch.zeros(5), 0.01) is None


# ------------------------------------------------------------------ through the sandbox


@pytest.fixture(scope="module")
def softmax_quick() -> ExerciseSpec:
    """softmax with its timed phase shrunk to one verified call (as validate's quick mode)."""
    return quick_spec(load_exercise(SOFTMAX))


def test_a_grading_finds_small_probabilities_left_at_zero(softmax_quick: ExerciseSpec) -> None:
    source = (HOSTILE / "softmax_exp_near_max.py").read_text()
    report = grade(softmax_quick, source, compare=False, profile=False)
    assert report["verdict"] == "wrong", report["message"]
    assert "compared relative to themselves" in (report["message"] or "")


ONLINE_IN_BLOCKS = """
import math

import torch


def softmax(x):
    # Flash-style: each block of columns exponentiated against its own maximum, the running
    # sum rescaled as the maximum grows, each block rescaled once at the end.
    rows = x.shape[0]
    m, s = torch.full((rows, 1), -math.inf), torch.zeros(rows, 1)
    parts = []
    for start in range(0, x.shape[1], 512):
        piece = x[:, start : start + 512]
        local = piece.amax(dim=-1, keepdim=True)
        e = (piece - local).exp()
        parts.append((local, e))
        new = torch.maximum(m, local)
        s = s * (m - new).exp() + e.sum(dim=-1, keepdim=True) * (local - new).exp()
        m = new
    return torch.cat([e * ((local - m).exp() / s) for local, e in parts], dim=-1)
"""


def test_a_grading_of_an_online_softmax_is_correct(softmax_quick: ExerciseSpec) -> None:
    report = grade(softmax_quick, ONLINE_IN_BLOCKS, compare=False, profile=False)
    assert report["verdict"] == "correct", report["message"]
