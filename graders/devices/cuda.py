"""A CUDA GPU: nothing but the kernels inside the timed window.

- **Inputs** are device memory the trusted side creates (``cuMemCreate``), draws into from
  its secret seed with the device's generator, and exports as a file descriptor that the
  sandbox inherits and maps before any student code exists
  (graders/harness/cuda_memory.py). Nothing is copied between host and device for a call;
  the sandbox's host memory does not grow with the timed size.
- **The sandbox's own device memory** is a pool the trusted side creates for that sandbox
  alone, of the exercise's ``gpu_memory_mb``: the harness makes it torch's allocator before
  torch starts, so every tensor of the submission, its output included, lies in memory the
  trusted side has mapped too, and the pool's size is the limit by construction. NVML
  watches for memory taken around torch (graders/devices/nvml.py).
- **Caches**: the L2 is the device's, not a process's, so the trusted side flushes it from
  its own context (a buffer twice the L2 written and synchronised) before the thaw.
- **Completion**: the harness synchronises before ``done``, but the harness is the
  student's. Where the driver offers it, the trusted side then takes the driver's checkpoint
  lock of the sandbox's process, which returns only once every piece of work that process
  submitted has finished, before the freeze: the window cannot close on a kernel still
  running. Whether it works is learnt once per process with a 2 s timeout
  (graders/devices/cuda_lock.py); where it does not (older drivers, gVisor, a lock that hangs
  or is switched off), the harness's synchronise is the witness, and the report says so
  (``gpu_completion_witness``), as it does for a weaker freezer on the CPU.
- **Out of memory**: a request the sandbox's pool cannot meet is the submission's
  out-of-memory error, raised by the harness after the call (torch does not check the null
  pointer the pool's allocator returns).
- **Outputs** are compared on the device, read at their offset in the pool (or in the
  inputs, for an output that is an input), bounded by the exercise's cap and the memory's
  size, while the sandbox is frozen.
- **Short kernels**: one window may hold several calls, each on an input set of its own
  (:func:`window_sets`), so the window's fixed cost stays a small share.
"""

from __future__ import annotations

import ctypes
import math
import os
from typing import Any

import torch

from graders.devices import cuda_lock
from graders.devices.base import (
    CompletionWitness,
    Layout,
    OutputUnreadable,
    SandboxRef,
    WindowPlan,
    checked_span,
)
from graders.harness import cuda_memory
from graders.harness import inputs as harness_inputs
from graders.sandbox import protocol
from graders.sandbox.containment import process_tree

_ALIGN = 4096
# A window's fixed cost (thaw, messages, lock, freeze) should stay under this share of it.
FIXED_COST_SHARE = 0.02
# The trusted side's input sets take at most this share of the device's memory, and this
# much: a bench's sandboxes each have a pool of their own beside them.
INPUT_MEMORY_SHARE = 0.15
INPUT_MEMORY_CAP = 24 << 30
# What a sandbox's process holds on the GPU besides the pool: its CUDA context, cuBLAS's and
# Triton's own buffers. NVML counts it; only memory beyond it and the pool is the student's
# doing (taken around torch's allocator).
CONTEXT_ALLOWANCE = 1536 << 20


def gpu_index(slot: int) -> int:
    """The GPU a slot grades on: with $GRADERS_GPUS="0,1,..." slot n takes entry n mod count
    (its sandbox sees only that one, as its cuda:0); else GPU 0."""
    gpus = [g.strip() for g in os.environ.get("GRADERS_GPUS", "").split(",") if g.strip()]
    return int(gpus[slot % len(gpus)]) if gpus else 0


def window_sets(
    device_memory: int,
    set_bytes: int,
    output_bytes: int,
    pool_bytes: int,
    seconds_per_call: float | None,
    fixed_cost_s: float | None,
) -> int:
    """Calls per timed window: enough that the window's fixed cost (``fixed_cost_s``, from
    calibration) is at most 2% of the calls' own time, within the device memory the trusted
    side gives to input sets, within half the sandbox's pool for the window's outputs (they
    stay alive until the trusted side has read them), and within the protocol's cap. One
    where either time is unknown."""
    if not seconds_per_call or not fixed_cost_s or seconds_per_call <= 0:
        return 1
    wanted = math.ceil(fixed_cost_s / (FIXED_COST_SHARE * seconds_per_call))
    budget = min(int(device_memory * INPUT_MEMORY_SHARE), INPUT_MEMORY_CAP)
    inputs_fit = budget // max(_round_up(set_bytes), 1)
    outputs_fit = (pool_bytes // 2) // max(output_bytes, 1)
    return max(1, min(wanted, inputs_fit, outputs_fit, protocol.MAX_CALLS_PER_WINDOW))


def _nbytes(item: dict[str, Any]) -> int:
    return math.prod(int(s) for s in item["shape"]) * harness_inputs.DTYPES[item["dtype"]].itemsize


def _round_up(value: int) -> int:
    return (value + _ALIGN - 1) // _ALIGN * _ALIGN


class CudaStage:
    """``sets`` input sets in one device allocation of the trusted side's, which every
    sandbox of the bench maps through an inherited file descriptor."""

    def __init__(self, input_bytes: int, sets: int, index: int) -> None:
        self.nbytes = _round_up(max(input_bytes, 1))
        self.sets, self.index = sets, index
        self.device = f"cuda:{index}"
        cuda_memory.make_current(index)
        self.shared = cuda_memory.SharedMemory.create(self.nbytes * sets, index)
        self.memory = cuda_memory.byte_tensor(self.shared.pointer, self.nbytes * sets, index)

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
        """Draw set ``index`` afresh, every time: the sandboxes map this memory and may have
        written it in their last call, so what it held is never reused (a draw on the
        device costs about what a copy would)."""
        harness_inputs.fill_(self._views(layout, index), layout, seed)
        # The draw is queued on our stream, and the sandbox's context does not wait for it:
        # finished before the thaw, or a call (a check call has no flush, which synchronises
        # too) could read inputs still being drawn.
        torch.cuda.synchronize(self.index)

    def staged(self, layout: Layout, seed: int) -> list[torch.Tensor] | None:
        # Never the staged memory itself: the sandbox maps it and may have written it, and
        # the reference and the mutation check need the values as drawn. A second draw on
        # the device costs less than a copy would.
        return None

    def regenerate(self, layout: Layout, seed: int) -> list[torch.Tensor]:
        return harness_inputs.make(layout, seed, self.device)

    def place(self, layout: Layout, sandbox: SandboxRef, index: int = 0) -> None:
        return None  # drawn where the sandbox reads them: nothing to copy

    def placed(self, layout: Layout, sandbox: SandboxRef, index: int = 0) -> list[torch.Tensor]:
        return self._views(layout, index)

    def placed_sample(
        self, layout: Layout, sandbox: SandboxRef, index: int, picks: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        # The trusted side's own mapping of device memory: reading it faults nothing the
        # sandbox can see, so the whole input is indexed where it lies.
        return [
            view.reshape(-1)[pick.to(view.device)]
            for view, pick in zip(self._views(layout, index), picks, strict=True)
        ]

    def scrub(self, sandbox: SandboxRef) -> None:
        """Zero every set before a sandbox loads new code: the bench's sandboxes all map this
        memory, and it still holds the last grading's inputs."""
        self.memory.zero_()
        torch.cuda.synchronize(self.index)

    def job_fields(self) -> dict[str, Any]:
        return {"inputs_fd": self.shared.fd, "inputs_size": self.shared.size}

    def shared_fds(self) -> tuple[int, ...]:
        return (self.shared.fd,) if self.shared.fd is not None else ()

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
        self.memory = torch.empty(0, dtype=torch.uint8)
        self.shared.close()


class SandboxPool:
    """One sandbox's device memory: created here, mapped here and in that sandbox only."""

    def __init__(self, limit_mb: int, index: int) -> None:
        self.index = index
        cuda_memory.make_current(index)  # on whichever thread starts the sandbox
        self.shared = cuda_memory.SharedMemory.create(limit_mb << 20, index)

    def job_fields(self) -> dict[str, Any]:
        return {"pool_fd": self.shared.fd, "pool_size": self.shared.size}

    def fds(self) -> tuple[int, ...]:
        return (self.shared.fd,) if self.shared.fd is not None else ()

    def started(self) -> None:
        """The sandbox holds its own descriptor now: ours only keeps another open."""
        if self.shared.fd is not None:
            os.close(self.shared.fd)
            self.shared.fd = None

    def bytes_at(self, offset: int, nbytes: int) -> torch.Tensor:
        return cuda_memory.byte_tensor(self.shared.pointer + offset, nbytes, self.index)

    def close(self) -> None:
        self.shared.close()


class CudaDevice:
    kind = "cuda"

    def __init__(self, slot: int) -> None:
        self.index = gpu_index(slot)
        cuda_memory.make_current(self.index)
        properties = torch.cuda.get_device_properties(self.index)
        self.total_memory = int(properties.total_memory)
        l2 = int(getattr(properties, "L2_cache_size", 0))
        self.flush_buffer = torch.empty(
            max(2 * l2, 64 << 20) // 4, dtype=torch.int32, device=f"cuda:{self.index}"
        )
        self.flush_value = 0
        # The settle: the driver's lock, where it works and leaves our own work unblocked.
        self.lock = cuda_lock.DriverLock(touch=self._touch_shared)
        self._watch: Any = None
        self.stage: CudaStage | None = None  # the bench's inputs (an output may lie in them)

    def _touch_shared(self) -> None:
        """Read a few bytes of the memory the sandboxes share (never write: an output may lie
        in the inputs) and wait for it: the trusted side's own work under a sandbox's lock."""
        memory = self.stage.memory if self.stage is not None else self.flush_buffer
        memory[:4].clone()
        torch.cuda.synchronize(self.index)

    def new_stage(self, input_bytes: int, sets: int) -> CudaStage:
        self.stage = CudaStage(input_bytes, sets, self.index)
        return self.stage

    def sandbox_memory(self, limit_mb: int) -> SandboxPool:
        return SandboxPool(limit_mb, self.index)

    def sets_per_window(self, plan: WindowPlan) -> int:
        return window_sets(
            self.total_memory,
            plan.set_bytes,
            plan.output_bytes,
            plan.pool_bytes,
            plan.seconds_per_call,
            plan.fixed_cost_s,
        )

    def flush(self) -> None:
        self.flush_value = (self.flush_value + 1) & 0x7FFFFFFF
        self.flush_buffer.fill_(self.flush_value)
        torch.cuda.synchronize(self.index)

    def resume(self, sandbox: SandboxRef) -> None:
        self.lock.resume(sandbox.host_pid)

    def settle(self, sandbox: SandboxRef, timeout_s: float) -> None:
        self.lock.settle(sandbox.host_pid, timeout_s)

    def forget(self, sandbox: SandboxRef) -> None:
        self.lock.forget(sandbox.host_pid)

    def completion(self) -> CompletionWitness:
        return cuda_lock.completion_witness()

    def read_output(
        self, described: dict[str, Any], sandbox: SandboxRef, cap_bytes: int
    ) -> torch.Tensor:
        dtype, shape, strides, span = checked_span(described, cap_bytes)
        if span == 0:
            return torch.empty(shape, dtype=dtype, device=f"cuda:{self.index}")
        address = described["address"]
        if address % dtype.itemsize:
            raise OutputUnreadable(f"it does not start on a {dtype.itemsize}-byte boundary")
        raw = self._mapped(address, span, sandbox)
        values = raw[: span - span % dtype.itemsize].view(dtype).as_strided(shape, strides)
        return values.clone()  # a copy of ours: the next call may reuse the sandbox's memory

    def read_sample(
        self, described: dict[str, Any], sandbox: SandboxRef, cap_bytes: int, flat: torch.Tensor
    ) -> torch.Tensor:
        values = self.read_output(described, sandbox, cap_bytes)
        return values.reshape(-1)[flat.to(values.device)]

    def _mapped(self, address: int, span: int, sandbox: SandboxRef) -> torch.Tensor:
        """The ``span`` bytes at the sandbox's ``address``, through our own mapping of the
        memory they lie in: its pool (anything torch made in it) or the inputs (an output
        that is an input, returned or written in place)."""
        pool = sandbox.device_memory
        offset = address - sandbox.pool_address
        if pool is not None and sandbox.pool_address and 0 <= offset <= pool.shared.size - span:
            return pool.bytes_at(offset, span)
        stage = self.stage
        offset = address - sandbox.inputs_address
        if stage is not None and 0 <= offset <= stage.nbytes * stage.sets - span:
            return stage.memory[offset : offset + span]
        raise OutputUnreadable(
            "it is not in memory that torch allocated on the GPU (memory taken around torch, "
            "e.g. with cudaMalloc from ctypes or CuPy, cannot be checked)"
        )

    def memory_problem(self, sandbox: SandboxRef, limit_mb: int) -> str | None:
        """Memory the sandbox's process holds beyond its pool, the inputs it maps and a
        context's allowance: taken around torch's allocator (cudaMalloc from ctypes,
        CuPy's pool), which the pool cannot bound."""
        watch = self._memory_watch()
        if watch is None:
            return None
        tree = {sandbox.host_pid, *process_tree(sandbox.host_pid)}
        used = watch.used_bytes(tree)  # its children's memory is the submission's too
        mapped = self.stage.shared.size if self.stage is not None else 0
        if used is None:
            return None
        # The inputs are the grader's, whoever NVML counts them to, and the context is
        # the runtime's: neither is held against the submission.
        own = max(used - mapped - CONTEXT_ALLOWANCE, 0)
        limit = limit_mb << 20
        if own <= limit:
            return None
        message: str = watch.over_limit_message(own, limit)
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
        witness = self.completion()
        return {
            "gpu_completion": witness.note,
            "gpu_completion_witness": witness.kind,
            "gpu_memory": memory,
        }

    def close(self) -> None:
        self.flush_buffer = torch.empty(0, dtype=torch.int32)


def capabilities(index: int = 0) -> dict[str, str]:
    """What this machine's driver offers the CUDA path, a sentence each (gpu-check prints
    them before it grades anything). Probes only the trusted side: whether the lock works on a
    sandbox is learnt from a sandbox's first settle, and the report says it."""
    found: dict[str, str] = {}
    try:
        lib = cuda_memory.driver()
    except cuda_memory.CudaMemoryError as exc:
        return {"driver": str(exc)}
    version = ctypes.c_int()
    if lib.cuDriverGetVersion(ctypes.pointer(version)) == 0:
        found["driver"] = f"CUDA driver API {version.value // 1000}.{version.value % 1000 // 10}"
    found["process_lock"] = (
        f"offered, but not used: {cuda_lock.LOCK_PROBE.switched_off()}"
        if cuda_lock.LOCK_PROBE.switched_off() and hasattr(lib, "cuCheckpointProcessLock")
        else "offered (cuCheckpointProcessLock): windows close on finished GPU work"
        if hasattr(lib, "cuCheckpointProcessLock")
        else "missing (driver older than 570): windows close on the harness's synchronise"
    )
    try:
        cuda_memory.make_current(index)
        cuda_memory.SharedMemory.create(1, index).close()
        found["shared_memory"] = "cuMemCreate with POSIX descriptors works"
    except cuda_memory.CudaMemoryError as exc:
        found["shared_memory"] = f"FAILS, so CUDA cannot be graded here: {exc}"
    try:
        from graders.devices.nvml import GpuMemoryWatch

        reason = GpuMemoryWatch(index).available()
        found["gpu_memory"] = reason or "per-process memory readable through NVML"
    except ImportError:
        found["gpu_memory"] = "not watched: nvidia-ml-py is not installed"
    return found
