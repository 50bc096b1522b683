"""The device layer's contract, and the order of a timed window, on the CPU.

The CUDA device cannot run here; what does not need a GPU is tested: that it offers every
method the phases call, the arithmetic of how many calls a window holds, the IPC module's
refusals, and that the phases treat whatever a device reports about the sandbox (memory over
its limit, work that would not settle) as the student's verdict. The order of the window is
asserted on the event log of a real grading through the real sandbox.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graders import devices
from graders.devices import base, cuda
from graders.devices.cpu import CpuDevice
from graders.grading import arena, runners, warm
from graders.grading.phases import Outcome, Run
from graders.harness import cuda_memory
from graders.measure import calibrate, gpu_calibration
from graders.sandbox import protocol, slots
from graders.spec.exercise import ExerciseSpec

SLOT = 1
HONEST = "import torch\n\ndef vector_add(a, b):\n    return a + b\n"
GIB = 1 << 30
MIB = 1 << 20


def _methods(protocol_class: type) -> set[str]:
    return {
        name
        for name, member in vars(protocol_class).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("protocol_class", "implementations"),
    [
        (base.Device, [CpuDevice, cuda.CudaDevice]),
        (base.InputStage, [arena.InputArena, cuda.CudaStage]),
    ],
)
def test_every_device_offers_what_the_phases_ask(
    protocol_class: type, implementations: list[type]
) -> None:
    wanted = _methods(protocol_class)
    assert wanted, "the protocol lists its methods"
    for implementation in implementations:
        missing = wanted - {name for name in dir(implementation) if not name.startswith("_")}
        assert not missing, f"{implementation.__name__} lacks {sorted(missing)}"


def test_the_factory_gives_a_cpu_device_and_refuses_unknown_kinds() -> None:
    device = devices.for_kind("cpu", SLOT, flush=False)
    assert device.kind == "cpu"
    plan = base.WindowPlan(2 * GIB, GIB, 0, 1e-4, 1e-3)
    assert device.sets_per_window(plan) == 1  # a CPU window holds one call
    assert device.completion().kind == "synchronous"
    with pytest.raises(ValueError, match=r"no device of kind 'tpu'"):
        devices.for_kind("tpu", SLOT)


@pytest.mark.parametrize(
    ("memory", "inputs", "output", "pool", "per_call_s", "fixed_s", "want"),
    [
        (80 * GIB, 2 * GIB, GIB, 12 * GIB, None, 2e-4, 1),  # peaks not calibrated yet
        (80 * GIB, 2 * GIB, GIB, 12 * GIB, 7.5e-4, None, 1),  # window cost unknown
        (80 * GIB, 8 * MIB, 4 * MIB, 8 * GIB, 5e-3, 2e-5, 1),  # 20 us of 5 ms: one is enough
        (80 * GIB, 8 * MIB, 4 * MIB, 8 * GIB, 1e-4, 2e-4, 64),  # wants 100: the protocol's cap
        (80 * GIB, 16 * MIB, 8 * MIB, 8 * GIB, 1e-3, 1.9e-4, 10),  # 0.19 ms / 2% of 1 ms: 9.5
        (80 * GIB, 2 * GIB, GIB, 12 * GIB, 7.5e-4, 2e-4, 6),  # wants 14: 12 GiB of inputs hold 6
        (141 * GIB, 2 * GIB, GIB, 24 * GIB, 7.5e-4, 2e-4, 10),  # an H200's 21 GiB hold 10
        (141 * GIB, 2 * GIB, GIB, 8 * GIB, 7.5e-4, 2e-4, 4),  # half an 8 GiB pool: 4 outputs
        (4 * GIB, 2 * GIB, GIB, 12 * GIB, 7.5e-4, 2e-4, 1),  # a small card: never fewer than one
    ],
)
def test_a_window_holds_enough_calls_within_the_memory_budget(
    memory: int,
    inputs: int,
    output: int,
    pool: int,
    per_call_s: float | None,
    fixed_s: float | None,
    want: int,
) -> None:
    assert cuda.window_sets(memory, inputs, output, pool, per_call_s, fixed_s) == want
    assert want <= protocol.MAX_CALLS_PER_WINDOW


def test_the_sandbox_pool_hands_out_aligned_blocks_and_merges_what_comes_back() -> None:
    pool = cuda_memory.Pool(base=1 << 20, size=4096)
    first = pool.allocate(100)
    second = pool.allocate(1000)
    assert first == 1 << 20 and second == first + cuda_memory.ALIGN
    assert second % cuda_memory.ALIGN == 0
    assert pool.allocate(4096) == 0  # more than is left: torch reports out of memory
    pool.release(first)
    pool.release(second)
    pool.release(second)  # twice, or a pointer it never gave: ignored
    assert pool.free == [(1 << 20, 4096)]  # merged back into one block
    assert pool.allocate(4096) == 1 << 20


def test_without_a_driver_the_memory_module_says_so() -> None:
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has an NVIDIA driver")
    with pytest.raises(cuda_memory.CudaMemoryError, match="driver"):
        cuda_memory.make_current(0)


def test_gpu_indices_follow_the_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRADERS_GPUS", raising=False)
    assert cuda.gpu_index(3) == 0
    monkeypatch.setenv("GRADERS_GPUS", "2, 5")
    assert [cuda.gpu_index(slot) for slot in range(4)] == [2, 5, 2, 5]


def test_the_expected_time_of_a_call_comes_from_the_cost_model(quick_spec: ExerciseSpec) -> None:
    n = quick_spec.sizes["cpu"].timed["n"]
    peaks = {"gbps": 12.0, "flops_per_s": 1e10}
    assert runners.expected_seconds(quick_spec, "cpu", peaks) == pytest.approx(12 * n / 12e9)
    assert runners.expected_seconds(quick_spec, "cpu", {}) is None


# ---------------------------------------------------------------- through the real sandbox


@pytest.fixture
def bench(quick_spec: ExerciseSpec, monkeypatch: pytest.MonkeyPatch) -> Iterator[warm.Bench]:
    monkeypatch.setenv("GRADERS_WARM", "0")
    with slots.acquire(SLOT):
        peaks = calibrate.peaks("cpu", slot=SLOT)
    made = warm.Bench(quick_spec, "cpu", SLOT, peaks, compare=False)
    try:
        yield made
    finally:
        made.close()


def _loaded_run(bench: warm.Bench, source: str) -> tuple[warm.Runner, Run]:
    with slots.acquire(SLOT):
        runner = bench.take_runner()
    runners.deliver(runner.scratch, source)
    bench.grader.load(runner.run)
    return runner, runner.run


def _windows(events: list[str]) -> tuple[list[list[str]], list[str]]:
    """The events inside each thaw..freeze window, and those outside any window."""
    windows, outside, current = [], [], None
    for event in events:
        if event == "thaw":
            current = [event]
        elif current is not None:
            current.append(event)
            if event == "freeze":
                windows.append(current)
                current = None
        else:
            outside.append(event)
    return windows, outside


def test_a_window_holds_the_calls_and_nothing_else(bench: warm.Bench) -> None:
    runner, run = _loaded_run(bench, HONEST)
    try:
        with slots.acquire(SLOT):
            bench.grader.check(run)
            bench.grader.time_calls(run, {})
    finally:
        runner.close()
    windows, outside = _windows(list(run.events))
    assert len(windows) >= 5 + 1 + 5  # the check sizes, a warmup, the timed calls
    for window in windows:
        # No input copy, flush or output read between go and done, nor anywhere else in it.
        assert window == ["thaw", "resume", "go", "done", "settle", "freeze"], window
    assert {"fill", "place", "flush", "read_output"} <= set(outside)
    # Each read of an output follows a freeze: the window closed before anything was read.
    events = list(run.events)
    for at, event in enumerate(events):
        if event == "read_output":
            last = max(i for i in range(at) if events[i] in ("freeze", "thaw"))
            assert events[last] == "freeze"


class _Reporting(CpuDevice):
    """A CPU device that reports what a GPU's could: memory over its limit, or work that is
    still running when the budget runs out."""

    def __init__(self, slot: int, memory: str | None = None, settle: Any = None) -> None:
        super().__init__(slot, flush=False)
        self.memory, self.settle_error = memory, settle

    def memory_problem(self, sandbox: base.SandboxRef, limit_mb: int) -> str | None:
        return self.memory

    def settle(self, sandbox: base.SandboxRef, timeout_s: float) -> None:
        if self.settle_error is not None:
            raise self.settle_error


@pytest.mark.parametrize(
    ("device", "verdict", "says"),
    [
        (
            _Reporting(SLOT, memory="Your code used 9.3 GiB of GPU memory; the limit is 8 GiB."),
            "error",
            "used 9.3 GiB of GPU memory; the limit is 8 GiB",
        ),
        (
            _Reporting(SLOT, settle=base.SettleFailed("still running", timed_out=True)),
            "timeout",
            "still running",
        ),
        (
            _Reporting(SLOT, settle=base.SettleFailed("the driver refused the lock")),
            "error",
            "the driver refused the lock",
        ),
    ],
)
def test_what_a_device_reports_of_the_sandbox_is_the_students_verdict(
    bench: warm.Bench, device: _Reporting, verdict: str, says: str
) -> None:
    runner, run = _loaded_run(bench, HONEST)
    bench.grader.dev = device
    try:
        with pytest.raises(Outcome) as ended, slots.acquire(SLOT):
            bench.grader.check(run)
    finally:
        runner.close()
    assert ended.value.verdict == verdict
    assert says in ended.value.message


def test_calibration_grades_trusted_kernels_through_the_sandbox(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The GPU's calibration path, run on the CPU sizes of its kernels: every kernel grades
    as correct through a real bench, and the figures come from the outside clock."""
    monkeypatch.setenv("GRADERS_WARM", "0")
    with slots.acquire(SLOT):
        measured = gpu_calibration.measure(SLOT, "cpu", device="cpu")
    assert measured["gbps"] > 0 and measured["window_s"] > 0
    for key in ("flops_per_s", "flops_per_s_tf32", "flops_per_s_bf16"):
        assert measured[key] > 0, key
    assert "graded through the sandbox like a submission" in measured["method"]


def test_the_capabilities_probe_says_what_is_missing_without_raising() -> None:
    found = cuda.capabilities()
    assert found and all(isinstance(text, str) and text for text in found.values())
    if not Path("/dev/nvidiactl").exists():
        assert "driver" in found["driver"]  # no libcuda here: said, not raised
