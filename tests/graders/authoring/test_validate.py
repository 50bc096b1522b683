"""`python -m graders validate`: the chapter's exercises pass, broken ones fail clearly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graders import load_exercise
from graders.authoring import validation_status
from graders.authoring.validate import quick_spec

REPO = Path(__file__).resolve().parents[3]
EXERCISES = REPO / "exercises"
NEW = ("gelu-residual", "layernorm", "softmax", "attention", "matmul")


def validate(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GRADERS_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "graders", "validate", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
    )


def copy(slug: str, target: Path) -> Path:
    folder = target / "ch15" / slug
    shutil.copytree(EXERCISES / "ch15" / slug, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_all_exercises_validate_quickly(cache_env: Path) -> None:
    # How long this takes is a benchmark's business (docs/BENCHMARKS.md), never a test's.
    result = validate("exercises/", cache=cache_env)
    assert result.returncode == 0, result.stderr
    assert "exercises passed" in result.stderr
    for slug in (*NEW, "vector-add"):
        assert validation_status(load_exercise(EXERCISES / "ch15" / slug)) == "passed"
    # A second run reuses the cached results.
    again = validate("exercises/ch15/softmax", cache=cache_env)
    assert again.returncode == 0 and "(cached)" in again.stderr


@pytest.mark.parametrize("slug", ("vector-add", *NEW))
def test_chapter_exercises_follow_the_format(slug: str) -> None:
    folder = EXERCISES / "ch15" / slug
    spec = load_exercise(folder)
    for name in ("prompt.en.md", "prompt.zh.md", "naive.py", "validate.toml"):
        assert (folder / name).is_file(), name
    samples = {p.stem for p in (folder / "samples").glob("*.py")}
    assert {"fast", "slow", "wrong", "crashing"} <= samples
    assert samples - {"fast", "slow", "wrong", "crashing"}, "needs a cheating sample"
    assert set(spec.devices) == {"cpu", "cuda"}
    # Quick mode keeps correctness sizes but times one call on the last of them.
    quick = quick_spec(spec)
    assert quick.sizes["cpu"].timed == spec.sizes["cpu"].check[-1]
    assert quick.timing.max_runs == 1


def test_missing_reference_names_the_file(tmp_path: Path, cache_env: Path) -> None:
    folder = copy("softmax", tmp_path)
    (folder / "reference.py").unlink()
    result = validate(str(folder), cache=cache_env)
    assert result.returncode != 0
    assert "reference.py: required file is missing" in result.stderr


def test_bad_formula_names_the_field(tmp_path: Path, cache_env: Path) -> None:
    folder = copy("softmax", tmp_path)
    edit(
        folder / "exercise.toml",
        "bytes = \"2 * rows * cols * elem('float32')\"",
        "bytes = \"2 * rows * colz * elem('float32')\"",
    )
    result = validate(str(folder), cache=cache_env)
    assert result.returncode != 0
    assert "exercise.toml: field 'cost.bytes'" in result.stderr
    assert "colz" in result.stderr


def test_unknown_keys_name_the_field(tmp_path: Path, cache_env: Path) -> None:
    folder = copy("softmax", tmp_path)
    edit(folder / "exercise.toml", 'entry = "softmax"', 'entry = "softmax"\nentri = "typo"')
    result = validate(str(folder), cache=cache_env)
    assert result.returncode != 0
    assert "exercise.toml: field 'entri': unknown key" in result.stderr

    folder = copy("layernorm", tmp_path)
    edit(folder / "validate.toml", "bound = ", "bownd = ")
    result = validate(str(folder), cache=cache_env)
    assert result.returncode != 0
    assert "validate.toml: field 'lesson.bownd': unknown key" in result.stderr


def test_shape_that_does_not_fit_the_reference(tmp_path: Path, cache_env: Path) -> None:
    folder = copy("layernorm", tmp_path)
    edit(folder / "exercise.toml", 'weight = { shape = ["cols"]', 'weight = { shape = ["rows"]')
    result = validate(str(folder), cache=cache_env)
    assert result.returncode != 0
    assert "exercise.toml: field 'sizes.cpu.check[1]'" in result.stderr
    assert "do not fit reference.py" in result.stderr


def test_loose_tolerance_is_caught(tmp_path: Path, cache_env: Path) -> None:
    folder = copy("softmax", tmp_path)
    edit(folder / "exercise.toml", "atol = 1e-6, rtol = 1e-5", "atol = 1e-2, rtol = 1e-2")
    result = validate(str(folder), cache=cache_env)
    assert result.returncode != 0
    assert "rounded to bfloat16 passes as correct" in result.stderr


def test_sample_with_the_wrong_verdict(tmp_path: Path, cache_env: Path) -> None:
    folder = copy("softmax", tmp_path)
    for sample in (folder / "samples").glob("*.py"):
        if sample.stem != "wrong":
            sample.unlink()
    (folder / "samples" / "expected.toml").write_text(
        '[wrong]\nverdict = "correct"\nscore = [6.0, 10.0]\n'
    )
    result = validate(str(folder), cache=cache_env)
    assert result.returncode != 0
    assert "expected.toml: field 'wrong.verdict': expected 'correct', graded 'wrong'" in (
        result.stderr
    )
    assert validation_status(load_exercise(folder)) == "failed"


def test_sample_without_expectation(tmp_path: Path, cache_env: Path) -> None:
    folder = copy("softmax", tmp_path)
    (folder / "samples" / "extra.py").write_text("def softmax(x):\n    return x\n")
    result = validate(str(folder), cache=cache_env)
    assert result.returncode != 0
    assert "expected.toml: field 'extra': samples/extra.py has no entry" in result.stderr


def test_unknown_status_before_any_run(tmp_path: Path, cache_env: Path) -> None:
    folder = copy("matmul", tmp_path)
    (folder / "prompt.en.md").write_text("changed content, new hash\n")
    assert validation_status(load_exercise(folder)) == "unknown"
