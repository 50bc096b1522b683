"""graders/devices/nvml.py: the sandbox's GPU memory read from NVML, with a fake pynvml.

The fake stands in for nvidia-ml-py's module in sys.modules, so every path (the sum over the
sandbox's processes, unknown usage, NVML failing to start, a GPU that lists no processes) runs
on a machine without a GPU. One test uses the real pynvml on this machine, which has no
driver: a reason, and nothing raised.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from graders.devices import nvml
from graders.devices.nvml import GIB, MIB, GpuMemoryWatch, over_limit_message
from graders.sandbox.containment import process_tree

# Pids above any pid_max (4194304 at most), so none is a real process here.
SANDBOX, CHILD, OTHER = 100_000_001, 100_000_002, 100_000_003


class FakeNVMLError(Exception):
    STRINGS = {3: "Not Supported", 9: "Driver Not Loaded", 12: "NVML Shared Library Not Found"}

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return self.STRINGS.get(self.value, f"NVML Error with code {self.value}")


@dataclass
class Proc:
    pid: int
    usedGpuMemory: int | None


def fake_pynvml(
    processes: dict[int, list[Proc]] | None = None,
    *,
    init_error: int | None = None,
    query_error: int | None = None,
    uuids: tuple[str, ...] = ("GPU-aaaa-1111", "GPU-bbbb-2222"),
) -> types.ModuleType:
    """A pynvml with the calls the watch makes; device i's processes are ``processes[i]``."""
    module: Any = types.ModuleType("pynvml")
    listed = processes if processes is not None else {0: []}
    module.NVMLError = FakeNVMLError
    module.NVML_ERROR_NOT_SUPPORTED = 3
    module.NVML_ERROR_NO_PERMISSION = 4
    module.NVML_ERROR_DRIVER_NOT_LOADED = 9
    module.NVML_ERROR_LIBRARY_NOT_FOUND = 12
    module.calls = []

    def init() -> None:
        module.calls.append("init")
        if init_error is not None:
            raise FakeNVMLError(init_error)

    def by_index(index: int) -> tuple[str, int]:
        if index >= len(uuids):
            raise FakeNVMLError(2)
        return ("handle", index)

    def by_uuid(uuid: str) -> tuple[str, int]:
        if uuid not in uuids:
            raise FakeNVMLError(6)
        return ("handle", uuids.index(uuid))

    def running(handle: tuple[str, int]) -> list[Proc]:
        if query_error is not None:
            raise FakeNVMLError(query_error)
        return list(listed.get(handle[1], []))

    module.nvmlInit = init
    module.nvmlShutdown = lambda: module.calls.append("shutdown")
    module.nvmlDeviceGetCount = lambda: len(uuids)
    module.nvmlDeviceGetHandleByIndex = by_index
    module.nvmlDeviceGetHandleByUUID = by_uuid
    module.nvmlDeviceGetUUID = lambda handle: uuids[handle[1]]
    module.nvmlDeviceGetComputeRunningProcesses = running
    return module


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch):
    """Install a fake pynvml, with no CUDA_VISIBLE_DEVICES and no torch context in the way."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(nvml, "_torch_uuid", lambda index: None)
    monkeypatch.setattr(GpuMemoryWatch, "_holds_context", lambda self: False)

    def install(module: types.ModuleType) -> types.ModuleType:
        monkeypatch.setitem(sys.modules, "pynvml", module)
        return module

    return install


def test_sums_only_the_sandboxs_processes_and_their_children(use):
    use(
        fake_pynvml(
            {
                0: [Proc(SANDBOX, 3 * GIB), Proc(OTHER, 5 * GIB), Proc(CHILD, GIB)],
                1: [Proc(SANDBOX, 7 * GIB)],  # another GPU: not this watch's
            }
        )
    )
    watch = GpuMemoryWatch(0)
    assert watch.available() is None
    # The caller names the sandbox's tree (graders.devices.cuda: containment.process_tree).
    assert watch.used_bytes({SANDBOX, CHILD}) == 4 * GIB
    assert watch.used_bytes({OTHER}) == 5 * GIB
    assert watch.used_bytes({OTHER + 10}) == 0  # no context on the GPU: nothing used


def test_unknown_usage_of_a_sandbox_process_is_unknown(use):
    use(fake_pynvml({0: [Proc(SANDBOX, None), Proc(OTHER, 2 * GIB)]}))
    watch = GpuMemoryWatch(0)
    assert watch.available() is None
    assert watch.used_bytes({SANDBOX}) is None
    assert watch.used_bytes({OTHER}) == 2 * GIB  # another's unknown figure changes nothing


def test_the_not_available_sentinel_is_unknown_too(use):
    use(fake_pynvml({0: [Proc(SANDBOX, nvml.NOT_AVAILABLE)]}))
    assert GpuMemoryWatch(0).used_bytes({SANDBOX}) is None


def test_no_driver_is_a_reason_not_an_error(use):
    use(fake_pynvml(init_error=12))
    watch = GpuMemoryWatch(0)
    reason = watch.available()
    assert reason is not None and "no NVIDIA driver" in reason
    assert watch.used_bytes({SANDBOX}) is None
    watch.close()  # nothing to shut down, nothing raised


def test_any_other_init_failure_is_named(use):
    use(fake_pynvml(init_error=999))
    assert GpuMemoryWatch(0).available() == "NVML failed to start: NVML Error with code 999"


def test_init_runs_once(use):
    module = use(fake_pynvml({0: [Proc(SANDBOX, GIB)]}))
    watch = GpuMemoryWatch(0)
    for _ in range(3):
        watch.used_bytes({SANDBOX})
    assert module.calls == ["init"]
    watch.close()
    assert module.calls == ["init", "shutdown"]


def test_a_gpu_that_does_not_report_processes(use):
    use(fake_pynvml(query_error=3))
    reason = GpuMemoryWatch(0).available()
    assert reason == "NVML does not report the processes using GPU 0: Not Supported"


def test_processes_listed_without_their_memory(use):
    use(fake_pynvml({0: [Proc(OTHER, None), Proc(OTHER + 1, None)]}))
    reason = GpuMemoryWatch(0).available()
    assert reason is not None and "per-process usage is not reported" in reason


def test_own_context_missing_from_the_list_means_the_pids_are_not_ours(use, monkeypatch):
    """gVisor lists nothing; a container without the host's pids lists foreign ids."""
    use(fake_pynvml({0: [Proc(OTHER, GIB)]}))
    monkeypatch.setattr(GpuMemoryWatch, "_holds_context", lambda self: True)
    reason = GpuMemoryWatch(0).available()
    assert reason is not None and "does not list this grader's own process" in reason


def test_own_context_listed_proves_the_pids(use, monkeypatch):
    module = use(fake_pynvml({0: [Proc(os.getpid(), GIB)]}))
    monkeypatch.setattr(GpuMemoryWatch, "_holds_context", lambda self: True)
    watch = GpuMemoryWatch(0)
    assert watch.available() is None
    module.nvmlDeviceGetComputeRunningProcesses = lambda handle: []  # proven once: kept
    assert watch.available() is None


@pytest.mark.parametrize(
    ("visible", "index", "expected"),
    [
        ("1", 0, 1),  # an index: NVML's, in PCI bus order
        ("GPU-bbbb", 0, 1),  # a UUID prefix
        ("0,GPU-aaaa-1111", 1, 0),
    ],
)
def test_cuda_visible_devices_maps_to_nvml(use, monkeypatch, visible, index, expected):
    use(fake_pynvml({0: [Proc(SANDBOX, GIB)], 1: [Proc(SANDBOX, 2 * GIB)]}))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert GpuMemoryWatch(index).used_bytes({SANDBOX}) == (expected + 1) * GIB


@pytest.mark.parametrize("visible", ["GPU-cccc", "0"])
def test_a_gpu_nvml_cannot_find_is_a_reason(use, monkeypatch, visible):
    use(fake_pynvml())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    reason = GpuMemoryWatch(1 if visible == "0" else 0).available()
    assert reason is not None and ("GPU-cccc" in reason or "names no GPU 1" in reason)


def test_torchs_uuid_wins(use, monkeypatch):
    use(fake_pynvml({0: [Proc(SANDBOX, GIB)], 1: [Proc(SANDBOX, 2 * GIB)]}))
    monkeypatch.setattr(nvml, "_torch_uuid", lambda index: "bbbb-2222")  # torch's spelling
    assert GpuMemoryWatch(0).used_bytes({SANDBOX}) == 2 * GIB


def test_without_nvidia_ml_py_a_reason(use, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    reason = GpuMemoryWatch(0).available()
    assert reason is not None and "nvidia-ml-py is not installed" in reason


@pytest.mark.parametrize(
    ("used", "limit", "expected"),
    [
        (int(9.3 * GIB), 8 * GIB, "Your code used 9.3 GiB of GPU memory; the limit is 8 GiB."),
        (8 * GIB + 1, 8 * GIB, "Your code used 8.1 GiB of GPU memory; the limit is 8 GiB."),
        (10 * GIB, 8 * GIB, "Your code used 10 GiB of GPU memory; the limit is 8 GiB."),
        (int(4.5 * GIB), int(2.5 * GIB), "used 4.5 GiB of GPU memory; the limit is 2.5 GiB."),
        (600 * MIB, 512 * MIB, "used 600 MiB of GPU memory; the limit is 512 MiB."),
    ],
)
def test_over_limit_message(used, limit, expected):
    message = over_limit_message(used, limit)
    assert expected in message
    assert message.endswith("Free temporary tensors (or use smaller ones) and resubmit.")
    assert GpuMemoryWatch.over_limit_message(used, limit) == message


def test_the_exact_message():
    assert over_limit_message(int(9.3 * GIB), 8 * GIB) == (
        "Your code used 9.3 GiB of GPU memory; the limit is 8 GiB. "
        "Free temporary tensors (or use smaller ones) and resubmit."
    )


def test_the_sandbox_tree_the_watch_is_given_holds_a_real_child():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while child.pid not in process_tree(os.getpid()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.pid in process_tree(os.getpid())
    finally:
        child.kill()
        child.wait()


def test_the_tree_of_a_gone_process_is_empty():
    assert process_tree(SANDBOX) == []  # the device adds the sandbox's own pid itself


def test_on_this_machine_without_a_driver_a_reason_and_nothing_raised(monkeypatch):
    """The real nvidia-ml-py: it imports without a GPU; NVML fails to start, and says so."""
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    watch = GpuMemoryWatch(0)
    reason = watch.available()
    if Path("/dev/nvidiactl").exists() and reason is None:
        pytest.skip("this machine has an NVIDIA driver")
    assert isinstance(reason, str) and reason
    assert watch.used_bytes({os.getpid()}) is None
    watch.close()
