"""``[rules] forbid``: the parser, the matching, the untrusted list, and real gradings.

The gradings use the quick copy of vector-add with ``forbid = ["add"]``: its natural answer
runs aten::add, and an honest way around it (``torch.sub(a, -b)``) runs none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graders import SpecError, load_exercise
from graders.authoring.forbidden_samples import exempt, forbidden_problems
from graders.authoring.meta import SampleExpectation
from graders.grading.forbidden_ops import MAX_NAMES, matches, operator_names

# The engine tests' quick vector-add (an absolute curve: these gradings have no companions).
from tests.graders.conftest import QUICK, copy_exercise


def _with_rules(tmp_path: Path, rules: str) -> Path:
    folder = copy_exercise(tmp_path, QUICK)
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text() + "\n[rules]\n" + rules + "\n")
    return folder


@pytest.fixture(scope="module")
def add_forbidden(tmp_path_factory: pytest.TempPathFactory):
    return load_exercise(_with_rules(tmp_path_factory.mktemp("forbid"), 'forbid = ["add"]'))


# ------------------------------------------------------------------ parser


def test_the_chapters_rules() -> None:
    root = Path(__file__).resolve().parents[2] / "exercises" / "ch15"
    assert load_exercise(root / "softmax").forbid == ("softmax",)
    assert load_exercise(root / "layernorm").forbid == ("layer_norm",)
    assert load_exercise(root / "attention").forbid == ("scaled_dot_product_attention",)
    assert load_exercise(root / "gelu-residual").forbid == ()


@pytest.mark.parametrize(
    ("rules", "says"),
    [
        ('forbid = ["aten::softmax"]', "without the 'aten::' prefix"),
        ("forbid = [3]", "is not a string"),
        ('forbid = ["Soft Max"]', "is not an operator name"),
        ('forbid = ["softmax", "_softmax"]', "lists an operator twice"),
        ('forbid = "softmax"', "forbid"),
        ('forbidden = ["softmax"]', "unknown key"),
    ],
)
def test_bad_rules_say_what_to_write(tmp_path: Path, rules: str, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_exercise(_with_rules(tmp_path, rules))
    assert "rules" in str(caught.value)
    assert says in str(caught.value)


# ------------------------------------------------------------------ matching


def test_aliases_and_internal_variants_match() -> None:
    names = [
        "aten::_softmax",
        "aten::log_softmax",
        "aten::native_layer_norm",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::mul",
    ]
    found = matches(("softmax", "layer_norm", "scaled_dot_product_attention"), names)
    assert found is not None
    assert found.rules == ["layer_norm", "scaled_dot_product_attention", "softmax"]
    assert found.operators == sorted(names[:4])
    assert "aten::_softmax" in found.message()


def test_what_does_not_match() -> None:
    # A student's own profiler range, a different norm, an operator that only shares a word.
    names = ["my_softmax", "aten::group_norm", "aten::norm", "aten::softplus", "aten::add"]
    assert matches(("softmax", "layer_norm", "scaled_dot_product_attention"), names) is None


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"names": []}, "not a list"),
        (["aten::add"] * (MAX_NAMES + 1), "more than"),
        (["aten::add", 7], "is not an operator name"),
        ([""], "is not an operator name"),
        (["aten::" + "x" * 300], "is not an operator name"),
    ],
)
def test_the_sandboxs_list_is_checked(raw: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        operator_names(raw)
    assert operator_names(["aten::add", "aten::mul"]) == ["aten::add", "aten::mul"]


# ------------------------------------------------------------------ gradings (real sandbox)


def test_a_forbidden_operator_keeps_correctness_only(graded, add_forbidden) -> None:
    source = "import torch\n\ndef vector_add(a, b):\n    return torch.ops.aten.add.Tensor(a, b)\n"
    report = graded(source, spec=add_forbidden)
    assert report["verdict"] == "correct"
    assert report["forbidden"] == {"rules": ["add"], "operators": ["aten::add"]}
    assert report["performance"]["points"] == 0
    assert report["score"] == add_forbidden.scoring.correctness_points
    assert "aten::add" in report["message"] and "write add" in report["message"]


def test_code_that_avoids_the_operator_is_not_flagged(graded, add_forbidden) -> None:
    source = "import torch\n\ndef vector_add(a, b):\n    return torch.sub(a, torch.neg(b))\n"
    report = graded(source, spec=add_forbidden)
    assert report["verdict"] == "correct"
    assert "forbidden" not in report
    assert report["message"] is None or "forbid" not in report["message"]


# ------------------------------------------------------------------ the validator's side


def test_reference_and_naive_are_exempt(add_forbidden) -> None:
    assert exempt(add_forbidden).forbid == ()
    assert add_forbidden.forbid == ("add",)


def test_sample_expectations_are_compared(add_forbidden, tmp_path: Path) -> None:
    toml = tmp_path / "expected.toml"
    caught = {"verdict": "correct", "forbidden": {"rules": ["add"], "operators": ["aten::add"]}}
    clean = {"verdict": "correct"}
    expects_add = SampleExpectation("library", "correct", 6, 6, where="library", forbidden="add")
    expects_none = SampleExpectation("fast", "correct", 6, 10, where="fast")
    assert forbidden_problems(add_forbidden, expects_add, caught, toml) == []
    assert forbidden_problems(add_forbidden, expects_none, clean, toml) == []
    assert (
        "expected the grading to find 'add'"
        in forbidden_problems(add_forbidden, expects_add, clean, toml)[0]
    )
    assert (
        "found forbidden operators (aten::add)"
        in forbidden_problems(add_forbidden, expects_none, caught, toml)[0]
    )
    typo = SampleExpectation("library", "correct", 6, 6, where="library", forbidden="ad")
    assert (
        "not in exercise.toml's [rules] forbid"
        in forbidden_problems(add_forbidden, typo, caught, toml)[0]
    )
