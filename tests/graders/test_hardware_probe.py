"""gpu-check's hardware probe (graders/gpu_check/hardware_probe.py) on the CPU: every question
that needs a GPU says so, the sandbox's view of nvcc and ncu is asked for real, the answers
are kept for the process, and the lock's part runs against the driver double."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from graders.devices import cuda_lock
from graders.gpu_check import hardware_probe
from graders.gpu_check.results import counts_as_failure
from graders.gpu_check.steps import STEPS, StepContext
from graders.harness import cuda_memory
from graders.sandbox import launch
from tests.graders.cuda_double import DriverDouble

PID = 777


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(cuda_lock.LOCK_SWITCH, raising=False)
    hardware_probe.forget()
    cuda_lock.LOCK_PROBE.reset()
    yield
    hardware_probe.forget()
    cuda_lock.LOCK_PROBE.reset()
    cuda_memory.use_driver(None)


@pytest.fixture
def toolkit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An nvcc that answers --version, in a toolkit the sandbox sees only if it is bound in."""
    tmp_path.chmod(0o755)
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    for folder in (home, home / "bin"):
        folder.chmod(0o755)
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.48'\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setenv("GRADERS_NCU", str(tmp_path / "no-ncu"))
    return nvcc


def _by_measure(ctx: StepContext) -> dict[str, tuple[str, str]]:
    return {row.measure: (row.status, row.value) for row in ctx.rows}


def test_the_probe_is_the_first_step() -> None:
    assert STEPS[0].name == "probe" and STEPS[0].budget(quick=False) <= 180


def test_on_the_cpu_each_hardware_question_needs_a_gpu(toolkit: Path) -> None:
    ctx = StepContext("cpu", quick=True)
    hardware_probe.probe(ctx)
    rows = _by_measure(ctx)
    for measure in hardware_probe.HARDWARE:
        status, value = rows[measure]
        assert (status, value) == ("needs a GPU", "this run is on the CPU"), measure
    # The sandbox's own view, asked for real: the toolkit bound in, found through PATH.
    status, value = rows[hardware_probe.NVCC]
    assert status == "info"
    assert value.startswith(f"{toolkit} (Cuda compilation tools, release 13.0")
    assert f"CUDA_HOME={toolkit.parent.parent}" in value
    assert rows[hardware_probe.NCU] == ("info", "not found on the sandbox's PATH")
    assert rows[hardware_probe.COMPLETION] == ("info", "synchronous (CPU)")
    assert ctx.raw["gpu_completion"] == "synchronous"
    assert not [r for r in ctx.rows if counts_as_failure(r.status, "cpu")]


def test_the_answers_are_kept_for_the_process(
    toolkit: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = StepContext("cpu", quick=True)
    hardware_probe.probe(first)

    def asked_again(*args: object, **kwargs: object) -> launch.Finished:
        raise AssertionError("the sandbox was asked a second time")

    monkeypatch.setattr(launch, "run_once", asked_again)
    again = StepContext("cpu", quick=True)
    hardware_probe.probe(again)
    assert again.rows == first.rows
    assert again.raw["gpu_completion"] == "synchronous"


def test_a_cuda_run_without_a_driver_measures_nothing_and_says_so(toolkit: Path) -> None:
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has an NVIDIA driver")
    ctx = StepContext("cuda", quick=True)
    hardware_probe.probe(ctx)
    rows = _by_measure(ctx)
    for measure in hardware_probe.HARDWARE:
        assert rows[measure][0] == "not measured", measure  # a failure on a CUDA run
    assert rows[hardware_probe.NVCC][0] == "pass"  # the toolkit is there, and runs
    assert rows[hardware_probe.NCU][0] == "FAIL"
    assert rows[hardware_probe.COMPLETION][1].startswith("driver_lock")


def test_the_lock_latency_over_empty_windows_with_the_double() -> None:
    double = DriverDouble(lock="works")
    cuda_memory.use_driver(double.library())
    seconds = hardware_probe.lock_latencies(PID, windows=50)
    assert len(seconds) == 50 and all(s >= 0 for s in seconds)
    assert len(double.lock_calls) == 50 and len(double.unlock_calls) == 50
    assert all(timeout == 2000 for _, timeout in double.lock_calls)
    assert cuda_lock.LOCK_PROBE.works is True
    assert hardware_probe.latency_text([1e-4, 3e-4, 2e-4]) == (
        "works: lock + unlock median 200 us, max 300 us over 3 empty windows"
    )


def test_a_lock_that_times_out_in_the_probe_makes_the_sync_the_witness() -> None:
    double = DriverDouble(lock="timeout")
    cuda_memory.use_driver(double.library())
    assert hardware_probe.lock_latencies(PID) == []
    assert len(double.lock_calls) == 1  # not 50 tries of 2 s
    assert cuda_lock.completion_witness().kind == "harness_sync"


def test_the_sandboxs_answer_is_read_line_by_line() -> None:
    found = hardware_probe.where_tools(
        "nvcc\t/usr/local/cuda/bin/nvcc\tCuda compilation tools\n"
        "ncu\t-\t\nCUDA_HOME\t/usr/local/cuda\t\n"
    )
    assert found == {
        "nvcc": ("/usr/local/cuda/bin/nvcc", "Cuda compilation tools"),
        "ncu": (None, ""),
        "CUDA_HOME": ("/usr/local/cuda", ""),
    }


@dataclass
class _Exported:
    """What the probe needs of the trusted side's memory: a descriptor and a size."""

    fd: int
    size: int


def test_a_probe_sandbox_starts_with_the_memory_and_says_why_it_cannot_map_it() -> None:
    """The probe's sandboxes are started for real (the command, the inherited descriptors, the
    harness's import path); on a machine without a driver the child says so in one line."""
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has an NVIDIA driver")
    fd = os.open(os.devnull, os.O_RDONLY)
    try:
        with pytest.raises(RuntimeError, match="did not map the memory: error the CUDA driver"):
            hardware_probe.start_child(_Exported(fd, 1 << 21), slot=1, timeout_s=60)
    finally:
        os.close(fd)
