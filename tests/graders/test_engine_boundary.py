"""The engine stands alone: no module of graders/ brings in Django or the site."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import graders
from graders import SpecError, exercise_kind

REPO = Path(__file__).resolve().parents[2]
EXERCISES = REPO / "exercises" / "ch15"


def all_graders_modules() -> list[str]:
    names = ["graders"]
    for module in pkgutil.walk_packages(graders.__path__, "graders."):
        # harness/ runs inside the sandbox as a top-level package, not as graders.harness;
        # __main__ modules run their command line when imported.
        if not module.name.startswith("graders.harness") and not module.name.endswith("__main__"):
            names.append(module.name)
    return sorted(names)


def test_importing_every_graders_module_brings_in_neither_django_nor_courseware() -> None:
    modules = all_graders_modules()
    assert "graders.engine" in modules and "graders.notebooks.grading" in modules
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules\n"
        "                if m.split('.')[0] in ('django', 'courseware', 'celery', 'config'))\n"
        "print(json.dumps(leaked))\n"
    )
    # A fresh interpreter: this test process has Django loaded already.
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_entry_point_tells_code_from_notebook_exercises(tmp_path: Path) -> None:
    assert exercise_kind(EXERCISES / "vector-add") == "code"
    assert exercise_kind(EXERCISES / "fusion-notebook") == "notebook"
    with pytest.raises(SpecError, match=r"neither exercise\.toml nor notebook\.toml"):
        exercise_kind(tmp_path)
    (tmp_path / "exercise.toml").write_text("")
    (tmp_path / "notebook.toml").write_text("")
    with pytest.raises(SpecError, match="holds both"):
        exercise_kind(tmp_path)


def test_a_notebook_exercise_is_never_graded_on_a_gpu() -> None:
    with pytest.raises(ValueError, match="graded on cpu"):
        graders.grade(EXERCISES / "fusion-notebook", "{}", device="cuda")
