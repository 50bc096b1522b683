"""A CUDA GPU: nothing but the kernels inside the timed window.

- **Inputs** are device memory the trusted side allocates (outside torch's allocator, so the
  export shows nothing else), draws into from its secret seed with the device's generator,
  and shares with the sandbox through a CUDA IPC handle that the harness opens before any
  student code exists. Nothing is copied between host and device for a call; the sandbox's
  host memory does not grow with the timed size.
- **Caches**: the L2 is the device's, not a process's, so the trusted side flushes it from
  its own context (a buffer twice the L2 written and synchronised) before the thaw.
- **Completion**: the harness synchronises before ``done``, but the harness is the
  student's. Where the driver offers it, the trusted side then takes the driver's checkpoint
  lock of the sandbox's process, which returns only once every piece of work that process
  submitted has finished, before the freeze: the window cannot close on a kernel still
  running. Where it does not (older drivers, gVisor), the harness's synchronise is the
  witness, and the report says so, as it does for a weaker freezer on the CPU.
- **Outputs** are compared on the device: the harness sends the IPC handle of the allocation
  the output lies in, and the trusted side maps it while the sandbox is frozen, copies the
  described span (bounded by the exercise's cap and the allocation's size), and unmaps it.
- **Memory**: the sandbox's device memory is read from NVML after every call, from outside.
- **Short kernels**: one window may hold several calls, each on an input set of its own
  (:meth:`CudaDevice.sets_per_window`), so the window's fixed cost stays a small share.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

from graders.devices.base import (
    CompletionWitness,
    Layout,
    OutputUnreadable,
    SandboxRef,
    SettleFailed,
    span_bytes,
)
from graders.harness import cuda_ipc
from graders.harness import inputs as harness_inputs
from graders.sandbox import protocol

_ALIGN = 4096
# A window's fixed cost (thaw, messages, lock, freeze) should stay under this share of it.
FIXED_COST_SHARE = 0.02
# The trusted side's input sets take at most this share of the device's memory, and this much.
INPUT_MEMORY_SHARE = 0.25
INPUT_MEMORY_CAP = 24 << 30


def gpu_index(slot: int) -> int:
    """The GPU a slot grades on: with $GRADERS_GPUS="0,1,..." slot n takes entry n mod count
    (its sandbox sees only that one, as its cuda:0); else GPU 0."""
    gpus = [g.strip() for g in os.environ.get("GRADERS_GPUS", "").split(",") if g.strip()]
    return int(gpus[slot % len(gpus)]) if gpus else 0


def window_sets(
    device_memory: int, input_bytes: int, seconds_per_call: float | None, fixed_cost_s: float | None
) -> int:
    """Calls per timed window: enough that the window's fixed cost (``fixed_cost_s``, from
    calibration) is at most 2% of the calls' own time, within the device memory the trusted
    side gives to input sets and the protocol's cap. One where either figure is unknown."""
    if not seconds_per_call or not fixed_cost_s or seconds_per_call <= 0:
        return 1
    wanted = math.ceil(fixed_cost_s / (FIXED_COST_SHARE * seconds_per_call))
    budget = min(int(device_memory * INPUT_MEMORY_SHARE), INPUT_MEMORY_CAP)
    fits = max(budget // max(_round_up(input_bytes), 1), 1)
    return max(1, min(wanted, fits, protocol.MAX_CALLS_PER_WINDOW))


def _nbytes(item: dict[str, Any]) -> int:
    return math.prod(int(s) for s in item["shape"]) * harness_inputs.DTYPES[item["dtype"]].itemsize


def _round_up(value: int) -> int:
    return (value + _ALIGN - 1) // _ALIGN * _ALIGN


class CudaStage:
    """``sets`` input sets in one device allocation of the trusted side's, shared by IPC."""

    def __init__(self, input_bytes: int, sets: int, index: int) -> None:
        self.nbytes = _round_up(max(input_bytes, 1))
        self.sets, self.index = sets, index
        self.device = f"cuda:{index}"
        cuda_ipc.make_current(index)
        self.pointer = cuda_ipc.allocate(self.nbytes * sets)
        self.handle, _, _ = cuda_ipc.export(self.pointer)
        self.memory = cuda_ipc.byte_tensor(self.pointer, self.nbytes * sets, index)
        self.filled: dict[int, tuple[str, int]] = {}  # set -> (layout, seed) it holds

    def placements(self, layout: Layout, index: int = 0) -> list[dict[str, Any]]:
        offset, placed = index * self.nbytes, []
        for item in layout:
            placed.append({"shape": list(item["shape"]), "dtype": item["dtype"], "offset": offset})
            offset += _round_up(_nbytes(item))
        if offset > (index + 1) * self.nbytes:
            raise ValueError(f"layout needs {offset} bytes, a set holds {self.nbytes}")
        return placed

    def _views(self, layout: Layout, index: int) -> list[torch.Tensor]:
        views = []
        for item, place in zip(layout, self.placements(layout, index), strict=True):
            dtype = harness_inputs.DTYPES[item["dtype"]]
            start, size = place["offset"], _nbytes(item)
            views.append(self.memory[start : start + size].view(dtype).view(item["shape"]))
        return views

    def fill(self, layout: Layout, seed: int, index: int = 0) -> None:
        key = (repr(layout), seed)
        if self.filled.get(index) == key:
            return
        self.filled.pop(index, None)  # half-written if the draw fails
        harness_inputs.fill_(self._views(layout, index), layout, seed)
        self.filled[index] = key

    def staged(self, layout: Layout, seed: int) -> list[torch.Tensor] | None:
        for index, key in self.filled.items():
            if key == (repr(layout), seed):
                return self._views(layout, index)
        return None

    def regenerate(self, layout: Layout, seed: int) -> list[torch.Tensor]:
        return harness_inputs.make(layout, seed, self.device)

    def place(self, layout: Layout, sandbox: SandboxRef, index: int = 0) -> None:
        return None  # drawn where the sandbox reads them: nothing to copy

    def placed(self, layout: Layout, sandbox: SandboxRef, index: int = 0) -> list[torch.Tensor]:
        return self._views(layout, index)

    def job_fields(self) -> dict[str, Any]:
        return {"inputs_ipc": self.handle}

    def host_region_bytes(self) -> int:
        return 0

    def pool_suits(self, layout: Layout, memory_bound: bool) -> bool:
        return False  # the device draws at its own bandwidth: every call is drawn afresh

    def use_pool(self, layout: Layout, seed: int) -> None:
        return None

    def stage_pool(self, layout: Layout, seed: int) -> None:
        return None

    def pool_staged(self) -> bool:
        return False

    def close(self) -> None:
        if self.pointer:
            self.memory = torch.empty(0, dtype=torch.uint8)
            cuda_ipc.free(self.pointer)
            self.pointer = 0


class CudaDevice:
    kind = "cuda"

    def __init__(self, slot: int) -> None:
        self.index = gpu_index(slot)
        cuda_ipc.make_current(self.index)
        properties = torch.cuda.get_device_properties(self.index)
        self.total_memory = int(properties.total_memory)
        l2 = int(getattr(properties, "L2_cache_size", 0))
        self.flush_buffer = torch.empty(
            max(2 * l2, 64 << 20) // 4, dtype=torch.int32, device=f"cuda:{self.index}"
        )
        self.flush_value = 0
        self.lock_unavailable: str | None = None  # why the driver's lock cannot be used
        self.lock_tried = False
        self.locked: set[int] = set()  # pids locked by the last settle
        self._watch: Any = None

    def new_stage(self, input_bytes: int, sets: int) -> CudaStage:
        return CudaStage(input_bytes, sets, self.index)

    def sets_per_window(
        self, input_bytes: int, seconds_per_call: float | None, fixed_cost_s: float | None
    ) -> int:
        return window_sets(self.total_memory, input_bytes, seconds_per_call, fixed_cost_s)

    def flush(self) -> None:
        self.flush_value = (self.flush_value + 1) & 0x7FFFFFFF
        self.flush_buffer.fill_(self.flush_value)
        torch.cuda.synchronize(self.index)

    def resume(self, sandbox: SandboxRef) -> None:
        if sandbox.host_pid in self.locked:
            self.locked.discard(sandbox.host_pid)
            try:
                cuda_ipc.unlock_process(sandbox.host_pid)
            except cuda_ipc.CudaIpcError as exc:
                raise SettleFailed(f"its CUDA calls could not be resumed ({exc})") from None

    def settle(self, sandbox: SandboxRef, timeout_s: float) -> None:
        """The driver's lock of the sandbox's process: it returns once all the work that
        process submitted has finished. Whether the driver offers it is learnt from the
        first settle of this worker, an empty call before any student code exists; a
        refusal after that is the sandbox's doing."""
        if self.lock_unavailable is not None:
            return
        try:
            cuda_ipc.lock_process(sandbox.host_pid, int(max(timeout_s, 0.001) * 1000))
        except cuda_ipc.CudaIpcError as exc:
            if not self.lock_tried:
                self.lock_tried = True
                self.lock_unavailable = str(exc)
                return
            timed_out = "TIMEOUT" in str(exc).upper()
            raise SettleFailed(
                f"its GPU work could not be confirmed finished ({exc})", timed_out
            ) from None
        self.lock_tried = True
        self.locked.add(sandbox.host_pid)

    def completion(self) -> CompletionWitness:
        if self.lock_unavailable is None:
            return CompletionWitness(
                "driver_lock",
                "the window closes after the driver confirmed that all the GPU work the "
                "sandbox submitted had finished",
            )
        return CompletionWitness(
            "harness_sync",
            "the driver's process lock is not available here "
            f"({self.lock_unavailable}); the window closes on the harness's own device "
            "synchronise, which a submission could patch",
        )

    def read_output(
        self, described: dict[str, Any], sandbox: SandboxRef, cap_bytes: int
    ) -> torch.Tensor:
        dtype = harness_inputs.DTYPES[described["dtype"]]
        shape, strides = described["shape"], described["strides"]
        span = span_bytes(shape, strides, dtype.itemsize)
        if span > cap_bytes:
            raise OutputUnreadable(f"it spans {span} bytes, more than the {cap_bytes} allowed")
        if span == 0:
            return torch.empty(shape, dtype=dtype, device=f"cuda:{self.index}")
        shared = described.get("ipc")
        if not shared:
            raise OutputUnreadable("it came without the handle of its device memory")
        try:
            base, size = cuda_ipc.open_handle(shared["handle"])
        except cuda_ipc.CudaIpcError as exc:
            raise OutputUnreadable(f"its device memory could not be opened ({exc})") from None
        try:
            if shared["offset"] + span > size:
                raise OutputUnreadable("it lies beyond the end of its device allocation")
            raw = cuda_ipc.byte_tensor(base + shared["offset"], span, self.index)
            usable = span - span % dtype.itemsize
            values = raw[:usable].view(dtype).as_strided(shape, strides).clone()
            torch.cuda.synchronize(self.index)
            return values
        finally:
            cuda_ipc.close_handle(base)

    def memory_problem(self, sandbox: SandboxRef, limit_mb: int) -> str | None:
        watch = self._memory_watch()
        if watch is None:
            return None
        used = watch.used_bytes({sandbox.host_pid})
        limit = limit_mb << 20
        if used is None or used <= limit:
            return None
        message: str = watch.over_limit_message(used, limit)
        return message

    def _memory_watch(self) -> Any:
        if self._watch is None:
            try:
                from graders.devices.nvml import GpuMemoryWatch

                self._watch = GpuMemoryWatch(self.index)
            except ImportError:
                self._watch = False
        if self._watch is False or self._watch.available() is not None:
            return None
        return self._watch

    def containment(self) -> dict[str, str]:
        watch = self._memory_watch()
        if watch is not None:
            memory = "watched from outside through NVML after every call"
        elif self._watch is False:
            memory = "not watched: nvidia-ml-py is not installed"
        else:
            memory = f"not watched: {self._watch.available()}"
        return {"gpu_completion": self.completion().note, "gpu_memory": memory}

    def close(self) -> None:
        self.flush_buffer = torch.empty(0, dtype=torch.int32)
