"""nvcc and ncu as a CUDA sandbox sees them (graders/sandbox/cuda_tools.py), through the real
sandbox: its /opt is empty and its /tmp a tmpfs of its own, so a toolkit or an Nsight Compute
installed anywhere but /usr is there only if it is bound in, and a CUDA C++ build finds nvcc
only through CUDA_HOME or PATH."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from graders.sandbox import cuda_tools, launch

SLOT = 1
WHERE = (
    "import os, shutil; "
    "print(shutil.which('nvcc')); print(shutil.which('ncu')); print(os.environ.get('CUDA_HOME'))"
)


def _tool(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho fake\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def toolkit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A CUDA toolkit and an Nsight Compute outside anything the sandbox shows."""
    tmp_path.chmod(0o755)
    home = tmp_path / "cuda-13.0"
    nvcc = _tool(home / "bin" / "nvcc")
    ncu = _tool(tmp_path / "nvidia" / "nsight-compute" / "2025.3.1" / "ncu")
    for folder in (home, home / "bin", ncu.parent, ncu.parent.parent, ncu.parent.parent.parent):
        folder.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setenv("GRADERS_NCU", str(ncu))
    return nvcc, ncu


def test_a_cuda_sandbox_finds_nvcc_and_ncu_where_the_host_has_them(
    toolkit: tuple[Path, Path],
) -> None:
    nvcc, ncu = toolkit
    finished = launch.run_once(
        [sys.executable, "-c", WHERE], device="cuda", slot=SLOT, timeout_s=60
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split() == [str(nvcc), str(ncu), str(nvcc.parent.parent)]
    ran = launch.run_once([str(ncu), "--version"], device="cuda", slot=SLOT, timeout_s=60)
    assert (ran.returncode, ran.stdout.strip()) == (0, "fake")  # runnable as the sandbox's uid


def test_a_cpu_sandbox_gets_no_toolkit(toolkit: tuple[Path, Path]) -> None:
    nvcc, _ = toolkit
    finished = launch.run_once([sys.executable, "-c", WHERE], device="cpu", slot=SLOT, timeout_s=60)
    assert finished.returncode == 0, finished.stderr
    found_nvcc, found_ncu, home = finished.stdout.split()
    assert found_nvcc != str(nvcc) and (found_ncu, home) == ("None", "None")


def test_the_toolkit_is_found_as_cpp_extension_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(key, raising=False)
    nvcc = _tool(tmp_path / "toolkit" / "bin" / "nvcc")
    (tmp_path / "toolkit" / "include").mkdir()
    monkeypatch.setenv("PATH", f"{nvcc.parent}:/usr/bin:/bin")
    assert cuda_tools.cuda_home() == str(tmp_path / "toolkit")  # two levels above nvcc
    # An nvcc that is a launcher elsewhere (/usr/local/bin/nvcc): not a toolkit's folder.
    launcher = _tool(tmp_path / "local" / "bin" / "nvcc")
    monkeypatch.setattr(cuda_tools, "USUAL_CUDA_HOME", str(tmp_path / "toolkit"))
    monkeypatch.setenv("PATH", f"{launcher.parent}:/usr/bin:/bin")
    assert cuda_tools.cuda_home() == str(tmp_path / "toolkit")
    monkeypatch.setattr(cuda_tools, "USUAL_CUDA_HOME", str(tmp_path / "none"))
    assert cuda_tools.cuda_home() == str(tmp_path / "local")  # as torch would take it
    monkeypatch.setenv("CUDA_PATH", "/somewhere/cuda")
    assert cuda_tools.cuda_home() == "/somewhere/cuda"
    monkeypatch.setenv("CUDA_HOME", "/elsewhere/cuda")
    assert cuda_tools.cuda_home() == "/elsewhere/cuda"


def test_only_folders_the_sandbox_cannot_see_are_bound(toolkit: tuple[Path, Path]) -> None:
    nvcc, ncu = toolkit
    home = str(nvcc.parent.parent)
    assert cuda_tools.install_folders(home, str(ncu)) == [home, str(ncu.parent)]
    assert cuda_tools.install_folders("/usr", "/usr/bin/true") == []  # /usr is bound already
    args = cuda_tools.bind_args(home, str(ncu))
    # Each bound folder's parents are made enterable first (bwrap would make them 0700).
    at = args.index(home)
    assert args[at - 1] == "--ro-bind"
    assert ["--perms", "0755", "--dir", str(Path(home).parent)] == args[at - 5 : at - 1]
