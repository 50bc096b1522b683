"""import-kernelbench: problem files in KernelBench's format become gradable draft exercises."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graders import Report, grade, load_exercise
from graders.authoring import load_meta
from graders.authoring.kernelbench import ENTRY, import_problem, read_problem
from graders.authoring.validate import quick_spec
from graders.errors import SpecError
from graders.grading.model_wrapping import wrap_model_submission
from graders.spec.exercise import KernelBenchEntry

REPO = Path(__file__).resolve().parents[4]
PROBLEMS = Path(__file__).resolve().parent / "problems"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graders", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ),
        timeout=300,
    )


@pytest.mark.parametrize("problem", ["relu", "linear_gelu", "softmax"])
def test_round_trip(problem: str, tmp_path: Path) -> None:
    folder = tmp_path / "ch99" / f"kb-{problem.replace('_', '-')}"
    result = run_cli("import-kernelbench", str(PROBLEMS / f"{problem}.py"), str(folder))
    assert result.returncode == 0, result.stderr
    spec = load_exercise(folder)
    meta = load_meta(folder)
    assert meta.draft is True and meta.kernelbench is not None
    assert meta.kernelbench.source == f"{problem}.py"
    # What grading needs is in exercise.toml; validate.toml only records the provenance.
    assert spec.kernelbench == KernelBenchEntry(model="ModelNew", seed=42)
    assert "model" not in (folder / "validate.toml").read_text()
    assert spec.entry == ENTRY
    # Scaled to the device: the CPU's timed inputs fit in tens of MB, not KernelBench's GBs.
    timed = spec.sizes["cpu"].timed
    assert sum(float(i.concrete_shape(timed)[0]) for i in spec.inputs) > 0
    assert float(spec.cost_bytes(timed)) <= 64 << 20
    assert all(i.dist == "normal" for i in spec.inputs), "inputs must be signed"

    quick = quick_spec(spec)

    def graded(source: str) -> Report:
        # grade() itself wraps a file that defines only ModelNew (wrap_model_submission).
        return grade(quick, source, device="cpu", profile=False)

    reference = graded((folder / "reference.py").read_text())
    assert reference["verdict"] == "correct", reference["message"]
    # KernelBench style: the file defines only ModelNew; the grader wraps it.
    model_new = (folder / "samples" / "model_new.py").read_text()
    assert f"def {ENTRY}" not in model_new
    report = graded(model_new)
    assert report["verdict"] == "correct", report["message"]
    wrong = graded((folder / "samples" / "wrong.py").read_text())
    assert wrong["verdict"] == "wrong", wrong["message"]


def test_the_command_line_grades_a_bare_model_new_file(tmp_path: Path) -> None:
    folder = tmp_path / "ch99" / "kb-relu"
    assert run_cli("import-kernelbench", str(PROBLEMS / "relu.py"), str(folder)).returncode == 0
    submission = folder / "samples" / "model_new.py"
    assert wrap_model_submission(load_exercise(folder), submission.read_text()) != (
        submission.read_text()
    )
    result = run_cli("grade", str(folder), str(submission), "--json", "--no-profile")
    assert result.returncode == 0, result.stderr
    assert '"verdict": "correct"' in result.stdout


def test_init_sizes_stay_consistent(tmp_path: Path) -> None:
    folder = import_problem(PROBLEMS / "linear_gelu.py", tmp_path / "ch99" / "kb-linear")
    spec = load_exercise(folder)
    for device, plan in spec.sizes.items():
        # in_features feeds both the input shape and Model(in_features, out_features):
        # it must not vary between the sizes of one device.
        values = {s["in_features"] for s in (*plan.check, plan.timed)}
        assert len(values) == 1, (device, values)
        assert {s["batch_size"] for s in plan.check} != {plan.timed["batch_size"]}
    starter = (folder / "starter.py").read_text()
    assert "class ModelNew" in starter and f"def {ENTRY}" in starter


def test_existing_folder_is_not_overwritten(tmp_path: Path) -> None:
    folder = tmp_path / "ch99" / "kb-relu"
    folder.mkdir(parents=True)
    (folder / "exercise.toml").write_text("")
    result = run_cli("import-kernelbench", str(PROBLEMS / "relu.py"), str(folder))
    assert result.returncode == 2
    assert "already exists" in result.stderr


def test_problem_without_get_inputs_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text((PROBLEMS / "relu.py").read_text().replace("def get_inputs", "def inputs"))
    with pytest.raises(SpecError, match=r"bad.py: field 'get_inputs': missing"):
        read_problem(bad)


def test_problem_is_read_without_running_it(tmp_path: Path) -> None:
    # Module-level code with side effects must not run in the importing process.
    marker = tmp_path / "ran"
    source = (PROBLEMS / "relu.py").read_text()
    noisy = tmp_path / "noisy.py"
    noisy.write_text(f"open({str(marker)!r}, 'w').close()\n{source}")
    problem = read_problem(noisy)
    assert not marker.exists()
    assert problem.inputs[0].shape == ("batch_size", "dim")


def test_wrapping_reads_only_the_spec(tmp_path: Path) -> None:
    folder = import_problem(PROBLEMS / "relu.py", tmp_path / "ch99" / "kb-relu")
    spec = load_exercise(folder)
    (folder / "validate.toml").unlink()  # grading never reads authoring files
    (folder / "starter.py").unlink()  # the wrapper block comes from the loaded spec
    bare = (folder / "samples" / "model_new.py").read_text()
    wrapped = wrap_model_submission(spec, bare)
    assert isinstance(wrapped, str) and f"def {ENTRY}" in wrapped
    assert wrap_model_submission(spec, bare.encode()) == wrapped
    # A file that defines the entry itself, or not the model class, is left to the precheck.
    reference = (folder / "reference.py").read_text()
    assert wrap_model_submission(spec, reference) == reference
    assert wrap_model_submission(spec, "x = 1\n") == "x = 1\n"
    assert wrap_model_submission(spec, "def (:\n") == "def (:\n"
    assert wrap_model_submission(spec, b"\xff class ModelNew: pass") == b"\xff class ModelNew: pass"
    # Without [kernelbench] in exercise.toml nothing is wrapped.
    plain = dataclasses.replace(spec, kernelbench=None)
    assert wrap_model_submission(plain, bare) == bare


def test_an_old_validate_toml_with_model_and_seed_still_reads(tmp_path: Path) -> None:
    folder = tmp_path / "ch99" / "kb-old"
    folder.mkdir(parents=True)
    (folder / "validate.toml").write_text(
        'draft = true\n[kernelbench]\nmodel = "ModelNew"\nseed = 42\nsource = "relu.py"\n'
    )
    meta = load_meta(folder)
    assert meta.kernelbench is not None and meta.kernelbench.source == "relu.py"
    assert meta.kernelbench.legacy_model == "ModelNew"
