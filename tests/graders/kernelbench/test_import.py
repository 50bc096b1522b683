"""import-kernelbench: problem files in KernelBench's format become gradable draft exercises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graders import grade, load_exercise
from graders.authoring import load_meta
from graders.authoring.kernelbench import ENTRY, import_problem, prepare_source, read_problem
from graders.authoring.validate import quick_spec
from graders.errors import SpecError

REPO = Path(__file__).resolve().parents[3]
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
    assert spec.entry == ENTRY
    # Scaled to the device: the CPU's timed inputs fit in tens of MB, not KernelBench's GBs.
    timed = spec.sizes["cpu"].timed
    assert sum(float(i.concrete_shape(timed)[0]) for i in spec.inputs) > 0
    assert float(spec.cost_bytes(timed)) <= 64 << 20
    assert all(i.dist == "normal" for i in spec.inputs), "inputs must be signed"

    quick = quick_spec(spec)

    def graded(source: str) -> dict:
        # grade() itself wraps a file that defines only ModelNew (prepare_source).
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
    assert prepare_source(load_exercise(folder), load_meta(folder), submission.read_text()) != (
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
