"""The two images: what they copy exists, what they run is a deploy script, and the worker's has
every program the sandbox calls. No Docker engine runs here, so the Dockerfiles are read."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest

from .layout import DEPLOY, ROOT

DOCKERFILES = sorted((DEPLOY / "docker").glob("*.Dockerfile"))
# The Debian/Ubuntu package of each program graders/ looks up with shutil.which.
PACKAGE_OF = {"bwrap": "bubblewrap", "taskset": "util-linux", "prlimit": "util-linux",
              "setpriv": "util-linux", "ncu": "cuda-nsight-compute-13-0",
              "nvcc": "cuda-nvcc-13-0"}  # fmt: skip


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    result, pending = [], ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued RUN
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        words = (pending + line).split(None, 1)
        result.append((words[0].upper(), words[1] if len(words) > 1 else ""))
        pending = ""
    return result


def args_of(path: Path, name: str) -> list[str]:
    return [args for instruction, args in instructions(path) if instruction == name]


def base_image(path: Path) -> str:
    (from_,) = args_of(path, "FROM")
    variable = re.fullmatch(r"\$\{(\w+)\}", from_.split()[0])
    assert variable, f"{path.name}: FROM names its image through an ARG"
    defaults = dict(a.split("=", 1) for a in args_of(path, "ARG") if "=" in a)
    return defaults[variable.group(1)]


def ignored(path: Path) -> list[str]:
    ignore = path.with_name(path.name + ".dockerignore")
    assert ignore.is_file(), f"{ignore.name} is missing"
    lines = ignore.read_text().splitlines()
    return [p.strip() for p in lines if p.strip() and not p.startswith("#")]


def apt_packages(path: Path) -> set[str]:
    packages: set[str] = set()
    for run in args_of(path, "RUN"):
        for command in run.split("&&"):
            words = command.split()
            if words[:2] == ["apt-get", "install"]:
                packages.update(w for w in words[2:] if not w.startswith("-"))
    return packages


def locked_torch() -> str:
    lock = (ROOT / "requirements.lock").read_text().splitlines()
    (torch,) = [line for line in lock if line.startswith("torch==")]
    return torch


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_the_image_copies_files_that_exist_and_the_context_keeps(dockerfile: Path):
    patterns = ignored(dockerfile)
    assert {".git", ".venv", "node_modules", "var"} <= set(patterns)
    copies = args_of(dockerfile, "COPY")
    assert copies
    for copy in copies:
        words = [w for w in copy.split() if not w.startswith("--")]
        for source in words[:-1]:
            assert (ROOT / source).exists(), f"{dockerfile.name}: COPY {source}: no such file"
            assert not any(fnmatch.fnmatch(source, p) for p in patterns), source


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_the_image_runs_a_deploy_script_under_tini(dockerfile: Path):
    assert dockerfile.read_text().startswith("# syntax=docker/dockerfile:1\n")
    (entrypoint,) = args_of(dockerfile, "ENTRYPOINT")
    assert json.loads(entrypoint) == ["/usr/bin/tini", "--"]
    assert "tini" in apt_packages(dockerfile)
    (cmd,) = args_of(dockerfile, "CMD")
    (script,) = json.loads(cmd)
    assert (ROOT / script).parent == DEPLOY and (ROOT / script).stat().st_mode & 0o111
    (workdir,) = args_of(dockerfile, "WORKDIR")
    assert workdir == "/opt/courseware"  # where the systemd units run it too


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_the_image_installs_the_locked_dependencies_through_make(dockerfile: Path):
    makefile = (ROOT / "Makefile").read_text()
    assert "VENV := .venv" in makefile and "STAMP := $(VENV)/.installed" in makefile
    runs = " ".join(args_of(dockerfile, "RUN"))
    assert "make --no-print-directory .venv/.installed" in runs
    assert "python3.11 -m venv .venv" in runs
    # A new torch pin in the lock must be looked at here too: the CPU/CUDA choice is per release.
    assert re.findall(r"torch==[\w.+]+", runs) == [locked_torch()] * runs.count("torch==")


def test_the_worker_image_is_cuda_runtime_on_ubuntu_with_what_the_sandbox_calls():
    worker = DEPLOY / "docker" / "worker.Dockerfile"
    assert re.fullmatch(r"nvidia/cuda:\d+\.\d+\.\d+-runtime-ubuntu\d+\.\d+", base_image(worker))
    packages = apt_packages(worker)
    assert {"python3.11", "python3.11-venv", "libseccomp2", "make"} <= packages
    called = set()
    for source in (ROOT / "graders").rglob("*.py"):
        called.update(re.findall(r'shutil\.which\("([\w-]+)"\)', source.read_text()))
    assert called, "graders/ no longer looks up any program: this test reads the wrong thing"
    for program in called:
        assert program in PACKAGE_OF, f"graders/ calls {program}: which package brings it?"
        assert PACKAGE_OF[program] in packages, f"{PACKAGE_OF[program]} ({program}) is missing"
    # An image whose torch cannot see a GPU fails to build rather than grading on the CPU.
    assert "assert torch.version.cuda" in " ".join(args_of(worker, "RUN"))


def test_the_web_image_has_no_cuda_and_skips_the_install_at_run_time():
    web = DEPLOY / "docker" / "web.Dockerfile"
    assert base_image(web).startswith("python:3.11-")
    runs = " ".join(args_of(web, "RUN"))
    assert "--index-url https://download.pytorch.org/whl/cpu" in runs
    env = " ".join(args_of(web, "ENV"))
    assert "SKIP_INSTALL=1" in env and "SKIP_INSTALL" in (DEPLOY / "web.sh").read_text()
    assert "BIND=0.0.0.0:8000" in env
