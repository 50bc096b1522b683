"""``[[check_cases]]``: parsing, the adversarial input kinds, layouts, and the chapter's cases.

The last tests run each exercise's reference and samples in this process (no sandbox): the
reference must pass its own cases, correct samples too, and the sloppy sample named after a
case must fail it. Verdicts through the sandbox are the validator's business.
"""

from __future__ import annotations

import importlib.util
import math
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from graders import SpecError, load_exercise
from graders.grading.correctness import compare, tolerance_for
from graders.harness import inputs as harness_inputs
from graders.spec.exercise import CASE_DISTRIBUTIONS, CheckCase, ExerciseSpec, Tolerance
from graders.spec.layouts import input_layout

from .conftest import REPO, copy_exercise

CH15 = REPO / "exercises" / "ch15"

GOOD_CASE = """
[[check_cases]]
name = "big"
inputs.a = { dist = "large", scale = 1e4 }

[[check_cases]]
name = "flat"
sizes = { n = 7 }
inputs.a = { dist = "near_constant_rows", spread = 1e-3 }
inputs.b = { dist = "offset", shift = -5 }

[[check_cases]]
name = "per_device"
sizes = { cpu = { n = 3 }, cuda = { n = 5 } }
inputs.b = { dist = "extreme_scale", scale = 6 }
"""


def with_cases(tmp_path: Path, text: str) -> Path:
    folder = copy_exercise(tmp_path, {})
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text() + text)
    return folder


def test_cases_parse(tmp_path: Path) -> None:
    spec = load_exercise(with_cases(tmp_path, GOOD_CASE))
    big, flat, per_device = spec.check_cases
    # No sizes: each device's first check size.
    assert big == CheckCase(
        "big", {"cpu": {"n": 0}, "cuda": {"n": 1}}, {"a": {"dist": "large", "scale": 1e4}}
    )
    assert flat.sizes == {"cpu": {"n": 7}, "cuda": {"n": 7}}
    assert flat.overrides == {
        "a": {"dist": "near_constant_rows", "spread": 1e-3},
        "b": {"dist": "offset", "shift": -5.0},
    }
    assert per_device.sizes == {"cpu": {"n": 3}, "cuda": {"n": 5}}
    assert per_device.sizes_for("cuda") == {"n": 5}
    assert load_exercise(copy_exercise(tmp_path / "plain", {})).check_cases == ()


def test_a_changed_case_changes_the_version(tmp_path: Path) -> None:
    before = load_exercise(with_cases(tmp_path / "one", GOOD_CASE)).content_hash
    changed = GOOD_CASE.replace("scale = 1e4", "scale = 1e3")
    assert load_exercise(with_cases(tmp_path / "two", changed)).content_hash != before


@pytest.mark.parametrize(
    ("case", "field", "words"),
    [
        ('name = "x"\ninputs.c = { dist = "large" }', "check_cases[0].inputs.c", "no such input"),
        (
            'name = "x"\ninputs.a = { dist = "huge" }',
            "check_cases[0].inputs.a.dist",
            "must be one of",
        ),
        (
            'name = "x"\ninputs.a = { scale = "big" }',
            "check_cases[0].inputs.a.scale",
            "expected int or float",
        ),
        ('name = "x"\ninputs.a = { scale = -1 }', "check_cases[0].inputs.a.scale", "must be > 0"),
        (
            'name = "x"\ninputs.a = { dist = "offset", shift = nan }',
            "check_cases[0].inputs.a.shift",
            "finite",
        ),
        (
            'name = "x"\ninputs.a = { dist = "large", spread = 1e-3 }',
            "check_cases[0].inputs.a.spread",
            "near_constant_rows",
        ),
        (
            'name = "x"\ninputs.a = { dist = "large", colour = 1 }',
            "check_cases[0].inputs.a.colour",
            "unknown key",
        ),
        (
            'name = "x"\nsizes = { n = -1 }\ninputs.a = { dist = "large" }',
            "check_cases[0].sizes.n",
            "integer >= 0",
        ),
        (
            'name = "x"\nsizes = { m = 4 }\ninputs.a = { dist = "large" }',
            "check_cases[0].sizes",
            "cpu",
        ),
        (
            'name = "x"\nsizes = { cpu = { n = 4 } }\ninputs.a = { dist = "large" }',
            "check_cases[0].sizes.cuda",
            "missing",
        ),
        ('name = "x"\ninputs = {}', "check_cases[0].inputs", "at least one input"),
        ('name = "not a name"\ninputs.a = { dist = "large" }', "check_cases[0].name", "identifier"),
        ('inputs.a = { dist = "large" }', "check_cases[0].name", "missing"),
        (
            'name = "x"\ninputs.a = { dist = "large" }\n[[check_cases]]\nname = "x"\ninputs.a = {}',
            "check_cases[1].name",
            "earlier case",
        ),
    ],
)
def test_bad_case_names_file_and_field(tmp_path: Path, case: str, field: str, words: str) -> None:
    folder = with_cases(tmp_path, f"\n[[check_cases]]\n{case}\n")
    with pytest.raises(SpecError) as caught:
        load_exercise(folder)
    message = str(caught.value)
    assert str(folder / "exercise.toml") in message
    assert f"field '{field}'" in message
    assert words in message


def test_new_kinds_need_a_floating_input(tmp_path: Path) -> None:
    folder = with_cases(tmp_path, '\n[[check_cases]]\nname = "x"\ninputs.a = { dist = "large" }\n')
    toml = folder / "exercise.toml"
    toml.write_text(
        toml.read_text().replace(
            'a = { shape = ["n"], dtype = "float32"', 'a = { shape = ["n"], dtype = "int32"'
        )
    )
    with pytest.raises(SpecError, match=r"check_cases\[0\]\.inputs\.a\.dist.*floating dtype"):
        load_exercise(folder)


def test_spec_and_harness_know_the_same_kinds() -> None:
    assert tuple(CASE_DISTRIBUTIONS) == harness_inputs.DISTRIBUTIONS


# --------------------------------------------------------------------------- distributions


def draw(dist: str, shape: tuple[int, ...], seed: int = 7, **keys: float) -> torch.Tensor:
    item: dict[str, Any] = {
        "name": "x",
        "shape": list(shape),
        "dtype": "float32",
        "dist": dist,
        **keys,
    }
    (tensor,) = harness_inputs.make([item], seed, "cpu")
    return tensor


def test_existing_kinds_draw_as_before() -> None:
    # Pinned against torch's own draws in the same order: graded inputs must not change.
    layout = [
        {"name": "a", "shape": [5, 3], "dtype": "float32", "dist": "normal", "scale": 2.0},
        {"name": "b", "shape": [4], "dtype": "float32", "dist": "uniform", "scale": 3.0},
        {"name": "c", "shape": [6], "dtype": "int64", "dist": "randint", "scale": 9},
    ]
    a, b, c = harness_inputs.make(layout, 11, "cpu")
    generator = torch.Generator().manual_seed(11)
    assert torch.equal(a, torch.empty(5, 3).normal_(0.0, 2.0, generator=generator))
    assert torch.equal(b, torch.empty(4).uniform_(-3.0, 3.0, generator=generator))
    assert torch.equal(c, torch.empty(6, dtype=torch.int64).random_(0, 9, generator=generator))


@pytest.mark.parametrize("dist", list(CASE_DISTRIBUTIONS))
def test_every_kind_is_deterministic_for_a_seed(dist: str) -> None:
    keys = {"scale": 3.0, "shift": 4.0, "spread": 1e-3}
    first = draw(dist, (8, 16), 7, **keys)
    assert torch.equal(first, draw(dist, (8, 16), 7, **keys))
    assert not torch.equal(first, draw(dist, (8, 16), 8, **keys))


def test_near_constant_rows_have_tiny_variance() -> None:
    x = draw("near_constant_rows", (64, 256), scale=0.1)
    row_var = x.double().var(dim=-1, unbiased=False)
    assert float(row_var.max()) < 1e-9  # (1e-4 * 0.1)^2 = 1e-10, far below eps = 1e-5
    assert float(x.double().mean(dim=-1).std()) > 0.05  # the offsets differ between rows
    wider = draw("near_constant_rows", (64, 256), scale=0.1, spread=1e-2)
    assert float(wider.double().var(dim=-1, unbiased=False).mean()) > 100 * float(row_var.mean())


def test_large_overflows_exp_in_float32() -> None:
    x = draw("large", (16, 64), scale=1e4)
    assert not bool(torch.isfinite(torch.exp(x)).all())
    assert bool(torch.isfinite(torch.exp(x - x.amax(dim=-1, keepdim=True))).all())


def test_offset_is_shifted() -> None:
    x = draw("offset", (64, 64), scale=1.0, shift=100.0)
    assert abs(float(x.mean()) - 100.0) < 0.2
    assert 0.8 < float(x.std()) < 1.2
    assert not bool(torch.isfinite(torch.exp(x)).all())


def test_extreme_scale_spans_magnitudes() -> None:
    x = draw("extreme_scale", (256, 64), scale=6.0)
    row_size = x.double().abs().mean(dim=-1).log10()
    assert float(row_size.min()) < -4 and float(row_size.max()) > 4
    assert bool(torch.isfinite(x).all())


# --------------------------------------------------------------------------- layouts


def test_input_layout_applies_a_case() -> None:
    spec = load_exercise(CH15 / "softmax")
    plain = input_layout(spec, {"rows": 2, "cols": 3})
    assert plain == [
        {"name": "x", "shape": [2, 3], "dtype": "float32", "dist": "normal", "scale": 25.0}
    ]
    case = spec.check_cases[1]
    shaped = input_layout(spec, case.sizes["cpu"], case)
    assert shaped == [
        {
            "name": "x",
            "shape": [257, 129],
            "dtype": "float32",
            "dist": "offset",
            "scale": 3.0,
            "shift": 100.0,
        }
    ]


def test_input_layout_leaves_other_inputs_alone() -> None:
    spec = load_exercise(CH15 / "attention")
    case = next(c for c in spec.check_cases if c.name == "offset_keys")
    q, k, v = input_layout(spec, case.sizes["cpu"], case)
    assert (q["dist"], q["scale"]) == ("normal", 2.0)
    assert (k["dist"], k["shift"]) == ("offset", 20.0)
    assert v == input_layout(spec, case.sizes["cpu"])[2]


# --------------------------------------------------------------------------- the chapter


def load_entry(path: Path, entry: str) -> Callable[..., torch.Tensor]:
    module_spec = importlib.util.spec_from_file_location(
        f"check_case_{path.parent.name}_{path.stem}", path
    )
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    function: Callable[..., torch.Tensor] = getattr(module, entry)
    return function


def chapter_cases() -> list[tuple[str, str]]:
    return [
        (folder.name, case.name)
        for folder in sorted(CH15.iterdir())
        if (folder / "exercise.toml").is_file()
        for case in load_exercise(folder).check_cases
    ]


CASES = chapter_cases()
SEEDS = (1, 2, 3)


def test_the_chapter_has_cases_that_bite() -> None:
    slugs = {slug for slug, _ in CASES}
    assert {"layernorm", "softmax", "attention"} <= slugs


def run_case(
    spec: ExerciseSpec, case: CheckCase, seed: int
) -> tuple[list[torch.Tensor], torch.Tensor]:
    tensors = harness_inputs.make(input_layout(spec, case.sizes["cpu"], case), seed, "cpu")
    expected = load_entry(spec.reference_path, spec.entry)(*[t.clone() for t in tensors])
    return tensors, expected


@pytest.mark.parametrize(("slug", "case_name"), CASES)
def test_reference_and_correct_samples_pass_the_case(slug: str, case_name: str) -> None:
    spec = load_exercise(CH15 / slug)
    case = next(c for c in spec.check_cases if c.name == case_name)
    expectations = tomllib.loads((spec.path / "samples" / "expected.toml").read_text())
    correct = [name for name, want in expectations.items() if want["verdict"] == "correct"]
    assert correct
    for seed in SEEDS:
        tensors, expected = run_case(spec, case, seed)
        tol = tolerance_for(expected.dtype, spec.tolerance)
        assert bool(torch.isfinite(expected).all())
        # The reference is sound on its own case: its float64 evaluation agrees. Within 10x
        # the tolerance: this catches a reference that overflows or is far off, while the
        # float32 rounding of near-ties (attention's large scores) may use up the tolerance.
        exact = load_entry(spec.reference_path, spec.entry)(*[t.double() for t in tensors])
        loose = Tolerance(10 * tol.atol, 10 * tol.rtol)
        result = compare(exact.to(expected.dtype), expected, loose)
        assert result.passed, (seed, result.message)
        # The tolerance leaves room for correct float32 code written another way.
        for name in correct:
            got = load_entry(spec.path / "samples" / f"{name}.py", spec.entry)(
                *[t.clone() for t in tensors]
            )
            result = compare(got, expected, tol)
            assert result.passed, (name, seed, result.message)


@pytest.mark.parametrize(("slug", "case_name"), CASES)
def test_the_sloppy_sample_fails_its_case(slug: str, case_name: str) -> None:
    spec = load_exercise(CH15 / slug)
    case = next(c for c in spec.check_cases if c.name == case_name)
    sample = spec.path / "samples" / f"{case_name}.py"
    expectations = tomllib.loads((spec.path / "samples" / "expected.toml").read_text())
    assert expectations[case_name]["verdict"] == "wrong"
    sloppy = load_entry(sample, spec.entry)
    for seed in SEEDS:
        tensors, expected = run_case(spec, case, seed)
        got = sloppy(*[t.clone() for t in tensors])
        tol = tolerance_for(expected.dtype, spec.tolerance)
        result = compare(got, expected, tol)
        # Not a near miss: NaN/inf, or somewhere at least 5x beyond the tolerance. (Not a
        # fixed 0.1: layernorm's offset_rows can only be so large before the reference's own
        # float32 rounding fills the tolerance, and the one-pass variance misses by 6-15x.)
        assert not result.passed
        assert result.max_abs_err is not None
        if not math.isinf(result.max_abs_err):
            error = (got.double() - expected.double()).abs()
            allowed = tol.atol + tol.rtol * expected.double().abs()
            assert float((error / allowed).max()) >= 5, result.message
