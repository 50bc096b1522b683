"""``[rules] forbid``: the parser, matching by route, the watch, the sandbox's counts, and
real gradings.

The gradings use the quick copy of vector-add with ``forbid = ["add"]``: its natural answer
runs aten::add, and an honest way around it (``torch.sub(a, -b)``) runs none, unless a route
names ``sub``. The quick copy's check sizes end at n = 65,537 and its timed size is 4,194,304.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from graders import SpecError, load_exercise
from graders.authoring.forbidden_samples import exempt, forbidden_problems
from graders.authoring.meta import SampleExpectation
from graders.grading.forbidden_ops import MAX_NAMES, matches, operator_calls, watch_patterns
from graders.harness.operator_watch import OperatorWatch, name_matches

# The engine tests' quick vector-add (an absolute curve: these gradings have no companions).
from tests.graders.conftest import QUICK, copy_exercise

CH15 = Path(__file__).resolve().parents[2] / "exercises" / "ch15"
CHECKED_LARGEST = 65537  # the quick vector-add's largest check size


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
    softmax = load_exercise(CH15 / "softmax")
    layernorm = load_exercise(CH15 / "layernorm")
    attention = load_exercise(CH15 / "attention")
    assert softmax.forbid == ("softmax",)
    assert layernorm.forbid == ("layer_norm",)
    assert attention.forbid == ("scaled_dot_product_attention",)
    assert load_exercise(CH15 / "gelu-residual").forbid == ()
    # The library's other routes to each rule's math (issue 38), kept beside its forbid.
    assert {"logsumexp"} <= {route for _, route in softmax.routes}
    assert {"group_norm", "instance_norm", "batch_norm", "rms_norm"} <= {
        route for _, route in layernorm.routes
    }
    assert {
        "multi_head_attention",
        "transformer_encoder_layer",
        "efficient_attention",
        "flash_attention",
    } <= {route for _, route in attention.routes}


@pytest.mark.parametrize(
    ("rules", "says"),
    [
        ('forbid = ["aten::softmax"]', "without the 'aten::' prefix"),
        ("forbid = [3]", "is not a string"),
        ('forbid = ["Soft Max"]', "is not an operator name"),
        ('forbid = ["softmax", "_softmax"]', "lists an operator twice"),
        ('forbid = "softmax"', "forbid"),
        ('forbidden = ["softmax"]', "unknown key"),
        ('forbid = ["add"]\nroutes.softmax = ["logsumexp"]', "'softmax' is not in forbid"),
        ('forbid = ["add"]\nroutes.add = ["aten::sub"]', "without the 'aten::' prefix"),
        ('forbid = ["add"]\nroutes.add = "sub"', "routes.add"),
    ],
)
def test_bad_rules_say_what_to_write(tmp_path: Path, rules: str, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_exercise(_with_rules(tmp_path, rules))
    assert "rules" in str(caught.value)
    assert says in str(caught.value)


# ------------------------------------------------------------------ matching by route


@pytest.mark.parametrize(
    ("exercise", "ran", "not_ran"),
    [
        (
            "softmax",
            ["aten::_softmax", "aten::log_softmax", "aten::logsumexp", "aten::logcumsumexp"],
            ["aten::exp", "aten::amax", "aten::logaddexp", "aten::softplus", "my_softmax"],
        ),
        (
            "layernorm",
            [
                "aten::native_layer_norm",
                "aten::native_group_norm",
                "aten::instance_norm",
                "aten::native_batch_norm",
                "aten::_native_batch_norm_legit_no_training",
                "aten::rms_norm",
                "aten::_fused_rms_norm",
            ],
            ["aten::linalg_vector_norm", "aten::norm", "aten::var_mean", "aten::rsqrt"],
        ),
        (
            "attention",
            [
                "aten::_scaled_dot_product_flash_attention_for_cpu",
                "aten::_native_multi_head_attention",
                "aten::_transformer_encoder_layer_fwd",
                "aten::_efficient_attention_forward",
                "aten::_flash_attention_forward",
            ],
            ["aten::_softmax", "aten::bmm", "aten::baddbmm", "aten::matmul"],
        ),
    ],
)
def test_routes_match_what_an_operator_computes(
    exercise: str, ran: list[str], not_ran: list[str]
) -> None:
    spec = load_exercise(CH15 / exercise)
    found = matches(spec.forbidden_patterns(), ran + not_ran)
    assert found is not None
    assert found.operators == sorted(ran)
    assert found.rules == list(spec.forbid)
    # Each found under the exercise's one rule, and the message names the operator and rule.
    assert spec.forbid[0] in found.message() and ran[0] in found.message()


def test_every_route_names_operators_this_torch_has() -> None:
    """A misspelt route (``group_nrom``) would watch nothing: each pattern of each exercise
    must match an operator that the dispatcher knows."""
    known = torch._C._dispatch_get_all_op_names()
    names = [name.partition("::")[2].split(".")[0] for name in known]
    for exercise in ("softmax", "layernorm", "attention"):
        for pattern in watch_patterns(load_exercise(CH15 / exercise)):
            assert any(name_matches(name, pattern) for name in names), (exercise, pattern)


def test_overloads_and_record_function_ranges() -> None:
    found = matches((("softmax", "softmax"),), ["aten::_softmax.out", "softmax_by_hand"])
    assert found is not None and found.operators == ["aten::_softmax"]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (["aten::add"], "not a table"),
        ({f"aten::op{i}": 1 for i in range(MAX_NAMES + 1)}, "more than"),
        ({"": 1}, "is not an operator name"),
        ({"aten::" + "x" * 300: 1}, "is not an operator name"),
        ({"aten::add": 0}, "has a count of"),
        ({"aten::add": True}, "has a count of"),
        ({"aten::add": "7"}, "has a count of"),
    ],
)
def test_the_sandboxs_counts_are_checked(raw: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        operator_calls(raw)
    assert operator_calls({"aten::add": 3}) == {"aten::add": 3}


# ------------------------------------------------------------------ the watch, in this process


@pytest.fixture
def softmax_watch() -> Iterator[OperatorWatch]:
    watch = OperatorWatch(("softmax", "logsumexp", "rms_norm"))
    watch.install()
    try:
        yield watch
    finally:
        watch.close()


def test_the_watch_counts_every_route_to_the_kernel(softmax_watch: OperatorWatch) -> None:
    x = torch.randn(16, 33)
    expected = torch.softmax(x, dim=-1)  # watched too: counted, and exactly the library's
    assert softmax_watch.calls == {"aten::softmax": 1, "aten::_softmax": 1}
    with torch.inference_mode():
        assert torch.equal(torch.softmax(x, dim=-1), expected)
    worker = threading.Thread(target=torch.logsumexp, args=(x, -1))
    worker.start()
    worker.join()
    torch.rms_norm(x, [33])  # a composite: counted at the composite, and at what it calls
    calls = softmax_watch.calls
    assert calls["aten::softmax"] == 2 and calls["aten::_softmax"] == 2
    assert calls["aten::logsumexp"] >= 1 and calls["aten::rms_norm"] == 1
    assert not softmax_watch.problems and softmax_watch.wrapped > 0 and softmax_watch.intact()


def test_the_watch_leaves_autograd_and_other_operators_alone() -> None:
    before = torch._C._dispatch_dump_table("aten::add.Tensor")
    x = torch.randn(4, 8, requires_grad=True)
    (unwatched_grad,) = torch.autograd.grad(torch.rms_norm(x, [8]).square().sum(), x)
    watch = OperatorWatch(("rms_norm",))
    watch.install()
    try:
        assert torch._C._dispatch_dump_table("aten::add.Tensor") == before
        (grad,) = torch.autograd.grad(torch.rms_norm(x, [8]).square().sum(), x)
        assert torch.equal(grad, unwatched_grad)
        assert watch.calls["aten::rms_norm"] == 1
    finally:
        watch.close()


def test_the_watch_keeps_a_counter_per_operator_not_a_record_per_call(
    softmax_watch: OperatorWatch,
) -> None:
    x = torch.randn(1, 8)
    for _ in range(20_000):
        torch.ops.aten._softmax(x, -1, False)
    assert softmax_watch.calls == {"aten::_softmax": 20_000}
    report = softmax_watch.report()
    assert report["calls"] == {"aten::_softmax": 20_000} and report["intact"]


def test_a_kernel_registered_over_the_watch_is_seen(softmax_watch: OperatorWatch) -> None:
    """A submission's own kernel in front of the watch's (or the watch's unregistered, which
    brings the library's back) leaves calls uncounted: the watch says it is not intact."""
    library = torch.library.Library("aten", "IMPL")
    library.impl("_softmax", lambda x, dim, half_to_float: x.exp() / x.exp().sum(dim, True), "CPU")
    try:
        torch.ops.aten._softmax(torch.randn(2, 3), -1, False)
        assert softmax_watch.calls == {}
        assert not softmax_watch.intact()
    finally:
        del library  # a Library unregisters what it registered once deleted
    assert softmax_watch.intact()


def test_a_pattern_that_matches_nothing_says_so() -> None:
    watch = OperatorWatch(("no_such_operator_anywhere",))
    watch.install()
    assert watch.wrapped == 0
    assert watch.problems == ["no operator matched no_such_operator_anywhere"]


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


def test_the_operator_is_seen_above_every_check_size(graded, add_forbidden) -> None:
    """The check sizes are public; the library call runs only in the timed calls."""
    source = (
        "import torch\n\ndef vector_add(a, b):\n"
        f"    if a.numel() > {CHECKED_LARGEST}:\n        return torch.add(a, b)\n"
        "    return torch.sub(a, torch.neg(b))\n"
    )
    report = graded(source, spec=add_forbidden)
    assert report["verdict"] == "correct"
    assert report["forbidden"] == {"rules": ["add"], "operators": ["aten::add"]}
    assert report["performance"]["points"] == 0


def test_the_operator_is_seen_on_a_thread_of_the_submission(graded, add_forbidden) -> None:
    source = (
        "from concurrent.futures import ThreadPoolExecutor\nimport torch\n\n"
        "_worker = ThreadPoolExecutor(1)\n\ndef vector_add(a, b):\n"
        "    return _worker.submit(torch.add, a, b).result()\n"
    )
    report = graded(source, spec=add_forbidden)
    assert report["verdict"] == "correct"
    assert report["forbidden"] == {"rules": ["add"], "operators": ["aten::add"]}
    assert report["performance"]["points"] == 0


def test_a_route_is_reported_under_its_rule(graded, tmp_path: Path) -> None:
    spec = load_exercise(_with_rules(tmp_path, 'forbid = ["add"]\nroutes.add = ["sub"]'))
    source = "import torch\n\ndef vector_add(a, b):\n    return torch.sub(a, torch.neg(b))\n"
    report = graded(source, spec=spec)
    assert report["verdict"] == "correct"
    assert report["forbidden"] == {"rules": ["add"], "operators": ["aten::sub"]}
    assert report["performance"]["points"] == 0


def test_an_unhooked_watch_earns_no_performance_points(graded, add_forbidden) -> None:
    source = (
        "import gc\nimport torch\n\n"
        "for thing in gc.get_objects():\n"
        "    if isinstance(thing, torch.library.Library) and thing.ns == 'aten':\n"
        "        thing._destroy()\n\n"
        "def vector_add(a, b):\n    return torch.add(a, b)\n"
    )
    report = graded(source, spec=add_forbidden)
    assert report["verdict"] == "correct"
    assert report["forbidden"] == {"rules": ["add"], "operators": []}
    assert report["performance"]["points"] == 0
    assert "could not read which operators your code ran" in report["message"]
    assert "unhooked" in report["message"]


def test_a_watch_that_cannot_be_set_leaves_the_grade_with_a_note(graded, tmp_path: Path) -> None:
    spec = load_exercise(_with_rules(tmp_path, 'forbid = ["no_such_operator_anywhere"]'))
    report = graded("fast.py", spec=spec)
    assert report["verdict"] == "correct"
    assert "forbidden" not in report
    assert report["performance"]["points"] > 0
    assert any("could not watch which operators" in note for note in report.get("notes", []))


# ------------------------------------------------------------------ the validator's side


def test_reference_and_naive_are_exempt(tmp_path: Path) -> None:
    spec = load_exercise(_with_rules(tmp_path, 'forbid = ["add"]\nroutes.add = ["sub"]'))
    assert exempt(spec).forbid == () and exempt(spec).forbidden_patterns() == ()
    assert watch_patterns(exempt(spec)) == ()
    assert watch_patterns(spec) == ("add", "sub")


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
