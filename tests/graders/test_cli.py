"""`python -m graders`: output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graders import GraderError, cli

from .conftest import REPO, VECTOR_ADD


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graders", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_rejected_is_still_exit_0_with_json() -> None:
    result = run_cli(
        "grade", "vector-add", str(VECTOR_ADD / "samples" / "syntax_error.py"), "--json"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["verdict"] == "rejected"


def test_human_summary_for_a_real_grading(quick_spec) -> None:
    result = run_cli("grade", str(quick_spec.path), str(VECTOR_ADD / "samples" / "wrong.py"))
    assert result.returncode == 0, result.stderr
    assert "WRONG" in result.stdout
    assert "score 0/10" in result.stdout


def test_unknown_exercise_is_usage_error(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("def vector_add(a, b): return a + b\n")
    result = run_cli("grade", "no-such-exercise", str(source))
    assert result.returncode == 2
    assert "no-such-exercise" in result.stderr


def test_missing_file_is_usage_error() -> None:
    result = run_cli("grade", "vector-add", "/nonexistent/file.py")
    assert result.returncode == 2
    assert "no such file" in result.stderr


def test_bad_arguments_are_usage_errors() -> None:
    assert run_cli("grade").returncode == 2
    assert run_cli("grade", "vector-add", "x.py", "--device", "tpu").returncode == 2


def test_grader_failure_is_exit_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "x.py"
    source.write_text("def vector_add(a, b): return a + b\n")

    def broken(*args: object, **kwargs: object) -> dict:
        raise GraderError("bwrap is missing")

    monkeypatch.setattr("graders.engine.grade_code", broken)
    assert cli.main(["grade", "vector-add", str(source)]) == 1
    assert "bwrap is missing" in capsys.readouterr().err


def test_calibrate_prints_peaks() -> None:
    result = run_cli("calibrate", "--json")
    assert result.returncode == 0, result.stderr
    peaks = json.loads(result.stdout)
    assert peaks["gbps"] > 0 and peaks["flops_per_s"] > 0
