"""Our grade-notebook command agrees with nbgrader's own autograde on nbgrader's files.

nbgrader ships test notebooks for its autograder. With ``submitted-unchanged.ipynb`` as
the source, each submission is graded twice: by ``nbgrader generate_assignment`` +
``nbgrader autograde`` in a throwaway course directory (nbgrader's kernel, unsandboxed:
these are nbgrader's own harmless files), and by ``python -m graders.notebooks
grade-notebook --json``. Score, maximum and needs-manual-grade must agree. All five
processes run at once to keep the test short (~15 s).

For the record, nbgrader 0.9.6 gives (score, max, needs manual): unchanged (1, 7, False),
changed (2, 7, True), cheat-attempt (1, 7, True), cheat-attempt-alternative (1, 7, True).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import NBGRADER_FILES, REPO

SUBMISSIONS = ("unchanged", "changed", "cheat-attempt", "cheat-attempt-alternative")
SOURCE = NBGRADER_FILES / "submitted-unchanged.ipynb"


def _start_nbgrader(course: Path) -> subprocess.Popen[str]:
    (course / "source" / "ps1").mkdir(parents=True)
    shutil.copy(SOURCE, course / "source" / "ps1" / "p1.ipynb")
    for name in SUBMISSIONS:
        folder = course / "submitted" / name / "ps1"
        folder.mkdir(parents=True)
        shutil.copy(NBGRADER_FILES / f"submitted-{name}.ipynb", folder / "p1.ipynb")
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{course}/gradebook.db'\n"
    )
    # nbgrader runs the `alembic` executable from PATH when it creates a gradebook.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    nbgrader = [sys.executable, "-m", "nbgrader"]
    script = (
        f"{' '.join(nbgrader)} generate_assignment ps1 --force --log-level=ERROR && "
        f"{' '.join(nbgrader)} autograde ps1 --log-level=ERROR"
    )
    return subprocess.Popen(
        ["bash", "-c", script], cwd=course, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def _nbgrader_figures(course: Path) -> dict[str, tuple[float, float, bool]]:
    from nbgrader.api import Gradebook

    figures = {}
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gb:
        for name in SUBMISSIONS:
            nb = gb.find_submission_notebook("p1", "ps1", name)
            figures[name] = (nb.score, nb.max_score, nb.needs_manual_grade)
    return figures


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    course = tmp_path_factory.mktemp("course")
    reference = _start_nbgrader(course)
    ours = {
        name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "graders.notebooks",
                "grade-notebook",
                str(SOURCE),
                str(NBGRADER_FILES / f"submitted-{name}.ipynb"),
                "--json",
            ],
            cwd=REPO,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in SUBMISSIONS
    }
    results = {}
    for name, process in ours.items():
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
        results[name] = json.loads(stdout)
    log, _ = reference.communicate(timeout=180)
    assert reference.returncode == 0, log
    return {"ours": results, "nbgrader": _nbgrader_figures(course)}


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_same_figures_as_nbgrader_autograde(both: dict[str, Any], name: str) -> None:
    report = both["ours"][name]
    assert report["verdict"] in ("correct", "wrong")
    ours = (report["score"], report["max_score"], report["needs_manual_grade"])
    assert ours == both["nbgrader"][name]


def test_cheat_attempts_fail_the_test_they_target(both: dict[str, Any]) -> None:
    for name in ("cheat-attempt", "cheat-attempt-alternative"):
        bar = next(c for c in both["ours"][name]["cells"] if c["grade_id"] == "bar")
        assert bar["score"] == 0 and bar["passed"] is False
