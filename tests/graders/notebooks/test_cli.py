"""python -m graders.notebooks grade-notebook: exit codes and output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from graders.notebooks.cli import main

from .conftest import REPO


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graders.notebooks", *args],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_rejected_submission_is_still_exit_zero(tiny_spec, tmp_path: Path) -> None:
    junk = tmp_path / "junk.ipynb"
    junk.write_text("not json")
    result = _run("grade-notebook", str(tiny_spec.path), str(junk), "--json", "--slot", "3")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "rejected"
    assert {"verdict", "message", "gradable", "score", "max_score", "needs_manual_grade",
            "cells"} <= set(report)  # fmt: skip


def test_usage_errors_exit_two(tiny_spec, tmp_path: Path, capsys) -> None:
    assert main(["grade-notebook", str(tiny_spec.path), str(tmp_path / "missing.ipynb")]) == 2
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "notebook.toml").write_text("slug = 1")
    submission = tmp_path / "s.ipynb"
    submission.write_text("{}")
    assert main(["grade-notebook", str(bad), str(submission)]) == 2
    assert "notebook.toml" in capsys.readouterr().err
    assert _run("grade-notebook").returncode == 2


def test_release_notebook_command(tiny_spec, tmp_path: Path) -> None:
    out = tmp_path / "release.ipynb"
    assert main(["release-notebook", str(tiny_spec.path), "-o", str(out)]) == 0
    assert out.read_bytes() == tiny_spec.release


def test_the_main_cli_grades_notebooks_too(tiny_spec, tmp_path: Path) -> None:
    junk = tmp_path / "junk.ipynb"
    junk.write_text("not json")
    result = subprocess.run(
        [sys.executable, "-m", "graders", "grade-notebook", str(tiny_spec.path), str(junk),
         "--json", "--slot", "3"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["verdict"] == "rejected"
    missing = subprocess.run(
        [sys.executable, "-m", "graders", "grade-notebook", str(tmp_path / "nope"), str(junk)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert missing.returncode == 2
