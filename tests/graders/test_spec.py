"""exercise.toml parsing: the real exercises load, broken ones fail with file and field."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from graders import SpecError, find_exercise, iter_exercises, load_exercise
from graders.spec.formula import Formula, FormulaError

from .conftest import REPO, VECTOR_ADD, copy_exercise


def test_vector_add_loads() -> None:
    spec = load_exercise(VECTOR_ADD)
    assert spec.slug == "vector-add"
    assert spec.chapter == "ch15"
    assert spec.entry == "vector_add"
    assert spec.devices == ("cpu", "cuda")
    assert spec.max_score == 10
    assert spec.title["zh"]
    assert "memory" in spec.prompt("en")
    assert "带宽" in spec.prompt("zh")
    assert spec.prompt("fr") == spec.prompt("en")
    assert "def vector_add" in spec.starter
    assert spec.cost_bytes({"n": 10}) == 120
    assert len(spec.content_hash) == 64
    # The reference is never attached to the spec as code.
    assert not any("torch.add" in str(v) for v in vars(spec).values())


def test_iter_and_find() -> None:
    specs = iter_exercises(REPO / "exercises")
    assert "vector-add" in [s.slug for s in specs]
    assert find_exercise("vector-add").path == VECTOR_ADD
    with pytest.raises(LookupError):
        find_exercise("no-such-exercise")


def test_content_hash_covers_every_file(tmp_path: Path) -> None:
    folder = copy_exercise(tmp_path, {})
    before = load_exercise(folder).content_hash
    (folder / "samples" / "fast.py").write_text("changed\n")
    assert load_exercise(folder).content_hash != before
    assert before == load_exercise(VECTOR_ADD).content_hash
    assert before != hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize(
    ("pattern", "replacement", "words"),
    [
        (r'entry = "vector_add"', 'entry = "vector_add"\ncolour = "red"', "field 'colour'"),
        (r'bytes = "3 \* n \* elem\(\'float32\'\)"', 'bytes = "3 * m"', "cost.bytes"),
        (r'bytes = "3 \* n \* elem\(\'float32\'\)"', "bytes = \"__import__('os')\"", "bad formula"),
        (r'bytes = "3 \* n \* elem\(\'float32\'\)"', 'bytes = "3 *"', "bad formula"),
        (r"correctness_points = 6", 'correctness_points = "six"', "expected int or float"),
        (r"correctness_points = 6", "correctness_points = true", "got bool"),
        (r'slug = "vector-add"', 'slug = "other"', "folder name"),
        (
            r'\[scoring.curve.cpu\]\nmeasure = "relative_to_reference"',
            '[scoring.curve.cpu]\nmeasure = "vibes"',
            "scoring.curve.cpu.measure",
        ),
        (
            r'dtype = "float32", dist = "normal", scale = 1.0 }\nb',
            'dtype = "float23", dist = "normal", scale = 1.0 }\nb',
            "inputs.a.dtype",
        ),
        (r"timed = \{ n = 16777216 \}", 'timed = { n = "big" }', "sizes.cpu.timed.n"),
        (r"\[scoring.curve.cuda\]", "[scoring.curve.tpu]", "scoring.curve.tpu"),
        (r"setup_s = 60", "setup_s = -1", "limits.setup_s"),
    ],
)
def test_bad_spec_names_file_and_field(
    tmp_path: Path, pattern: str, replacement: str, words: str
) -> None:
    folder = copy_exercise(tmp_path, {pattern: replacement})
    with pytest.raises(SpecError) as caught:
        load_exercise(folder)
    message = str(caught.value)
    assert "exercise.toml" in message
    assert words in message


@pytest.mark.parametrize("missing", ["exercise.toml", "reference.py", "starter.py", "prompt.en.md"])
def test_missing_file(tmp_path: Path, missing: str) -> None:
    folder = copy_exercise(tmp_path, {})
    (folder / missing).unlink()
    with pytest.raises(SpecError, match=missing):
        load_exercise(folder)


def test_not_toml(tmp_path: Path) -> None:
    folder = copy_exercise(tmp_path, {})
    (folder / "exercise.toml").write_text("slug = \n")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_exercise(folder)


def test_iter_exercises_fails_on_a_bad_one(tmp_path: Path) -> None:
    copy_exercise(tmp_path, {r"flops = \"n\"": 'flops = "n +"'})
    with pytest.raises(SpecError, match=r"cost\.flops"):
        iter_exercises(tmp_path)


@pytest.mark.parametrize(
    ("text", "value"),
    [("3 * n * elem('float32')", 120), ("2 ** 3 + n // 3", 11), ("-n + 1.5", -8.5)],
)
def test_formula_values(text: str, value: float) -> None:
    assert Formula(text)({"n": 10}) == value


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "n.real",
        "[n]",
        "n if n else 1",
        "elem(n)",
        "open('x')",
        "2 ** 99999",
        "lambda: 1",
    ],
)
def test_formula_rejects_code(text: str) -> None:
    with pytest.raises(FormulaError):
        Formula(text)({"n": 10})


def test_kernelbench_table_is_optional_and_typed(tmp_path: Path) -> None:
    from graders.spec.exercise import KernelBenchEntry

    assert load_exercise(VECTOR_ADD).kernelbench is None
    folder = copy_exercise(tmp_path / "a", {r"\[inputs\]": "[kernelbench]\nseed = 7\n\n[inputs]"})
    assert load_exercise(folder).kernelbench == KernelBenchEntry(model="ModelNew", seed=7)
    for i, (table, words) in enumerate(
        [
            ('[kernelbench]\nmodel = "Model New"', "field 'kernelbench.model'"),
            ("[kernelbench]\nseed = true", "field 'kernelbench.seed': expected int, got bool"),
            ("[kernelbench]\nweights = 1", "field 'kernelbench.weights': unknown key"),
        ]
    ):
        bad = copy_exercise(tmp_path / str(i), {r"\[inputs\]": f"{table}\n\n[inputs]"})
        with pytest.raises(SpecError, match=re.escape(words)):
            load_exercise(bad)


def test_reference_and_naive_paths() -> None:
    spec = load_exercise(VECTOR_ADD)
    assert spec.reference_path == VECTOR_ADD / "reference.py"
    assert spec.naive_path in (None, VECTOR_ADD / "naive.py")
