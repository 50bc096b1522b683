"""The one interface the grading phases use for whatever differs between a CPU and a GPU.

A grading's phases (graders/grading/phases.py) never branch on the device's name: they ask a
:class:`Device` to stage the inputs (before the window), flush the caches (before the
window), let the sandbox's submitted work finish (inside the window, before the freeze),
read an output (after the freeze) and watch memory (after the freeze). The timed window is
the same on every device: thaw, ``go``, the calls, ``done``, ``settle``, freeze.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from graders.harness.inputs import DTYPES

# A layout: one dict per input (name, shape, dtype, dist, scale), as graders.spec.layouts
# makes it.
Layout = list[dict[str, Any]]


class OutputUnreadable(Exception):
    """The output description points at memory that cannot be read as described."""


class Unplaceable(Exception):
    """The sandbox's input region can no longer take the inputs (unmapped or protected)."""


def span_bytes(shape: list[int], strides: list[int], itemsize: int) -> int:
    """Bytes from a strided tensor's first element to the end of its last (0 if empty)."""
    if any(size == 0 for size in shape):
        return 0
    last = sum((size - 1) * stride for size, stride in zip(shape, strides, strict=True))
    return (last + 1) * itemsize


def checked_span(
    described: dict[str, Any], cap_bytes: int
) -> tuple[torch.dtype, list[int], list[int], int]:
    """(dtype, shape, strides, span in bytes) of an output the sandbox described, refused
    (OutputUnreadable) when its span is over ``cap_bytes``: its address, shape and strides
    are the student's word, checked before a byte is read."""
    dtype = DTYPES[described["dtype"]]
    shape, strides = described["shape"], described["strides"]
    span = span_bytes(shape, strides, dtype.itemsize)
    if span > cap_bytes:
        raise OutputUnreadable(f"it spans {span} bytes, more than the {cap_bytes} allowed")
    dense = math.prod(shape) * dtype.itemsize
    if span > SPARSE_FACTOR * dense + SPARSE_SLACK:
        # The read copies the whole span: a view with huge strides would make the trusted
        # side copy (and keep a buffer of) memory the submission sized.
        raise OutputUnreadable(
            f"its {dense} bytes of values are spread over {span} bytes (a view with large "
            "strides); return a contiguous tensor, e.g. with .contiguous()"
        )
    return dtype, shape, strides, span


# An output may spread its values over at most twice their size (a transposed or sliced view),
# plus a little: more is refused before anything is read.
SPARSE_FACTOR, SPARSE_SLACK = 2, 64 << 10


# An output's values may lie in at most this many separate pieces (rows of a padded view):
# each is one iovec of a read, and a view strided element by element is not a result.
MAX_PIECES = 1 << 20


@dataclass(frozen=True)
class ElementPieces:
    """Where exactly an output's values lie: ``count`` pieces of ``piece`` elements each,
    starting at ``starts`` (element offsets from its address), in the order that, laid end
    to end, makes the tensor ``packed_shape`` (contiguous), which ``assemble`` turns into
    the described shape. Reading just these pieces reads its values and nothing between
    them (issue 29, class 2: padding the trusted side faulted in showed which call it read).
    """

    starts: torch.Tensor  # int64, one per piece
    piece: int  # elements per piece
    packed_shape: tuple[int, ...]
    order: tuple[int, ...]  # the described dims the packed dims are, outermost first
    shape: tuple[int, ...]  # the described shape

    def assemble(self, packed: torch.Tensor) -> torch.Tensor:
        """The described tensor from its pieces read end to end (a view where possible)."""
        values = packed.view(self.packed_shape)
        # Put the packed dims back in described order; dims of size 1, and broadcast dims
        # (stride 0, read once), come back as size-1 dims expanded to their size.
        ranks = sorted(range(len(self.order)), key=lambda k: self.order[k])
        values = values.permute(ranks) if self.order else values
        full = [1] * len(self.shape)
        for dim in self.order:
            full[dim] = self.shape[dim]
        return values.reshape(full).expand(self.shape)


def element_pieces(shape: list[int], strides: list[int]) -> ElementPieces:
    """The pieces of a strided tensor's values (see :class:`ElementPieces`); raises
    OutputUnreadable for values that overlap in memory or lie in too many pieces."""
    dims = sorted(
        (d for d in range(len(shape)) if shape[d] > 1 and strides[d] != 0),
        key=lambda d: (-strides[d], -d),
    )
    reach = 1  # elements spanned by the dims inside the current one
    for dim in reversed(dims):
        if strides[dim] < reach:
            raise OutputUnreadable(
                "its values overlap in memory (a view whose strides reuse elements); return "
                "a tensor with one place per value, e.g. with .contiguous()"
            )
        reach = (shape[dim] - 1) * strides[dim] + reach
    piece, inner = 1, len(dims)
    while inner > 0 and strides[dims[inner - 1]] == piece:
        inner -= 1
        piece *= shape[dims[inner]]
    outer = dims[:inner]
    count = math.prod(shape[d] for d in outer)
    if count > MAX_PIECES:
        raise OutputUnreadable(
            f"its values lie in {count} separate pieces of memory (a view with gaps between "
            "elements); return a contiguous tensor, e.g. with .contiguous()"
        )
    starts = torch.zeros((), dtype=torch.int64)
    for dim in outer:
        step = torch.arange(shape[dim], dtype=torch.int64) * strides[dim]
        starts = (starts.unsqueeze(-1) + step).reshape(-1)
    return ElementPieces(
        starts=starts.reshape(-1),
        piece=piece,
        packed_shape=tuple(shape[d] for d in dims),
        order=tuple(dims),
        shape=tuple(shape),
    )


def element_offsets(shape: list[int], strides: list[int], flat: torch.Tensor) -> torch.Tensor:
    """The element offsets, from the tensor's address, of the values at row-major indices
    ``flat`` (int64)."""
    offsets = torch.zeros_like(flat)
    rest = flat.clone()
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        offsets += (rest % size) * stride
        rest //= size
    return offsets


class SettleFailed(Exception):
    """The sandbox's submitted device work could not be confirmed finished (``timed_out``:
    it was still running when the budget ran out)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class SandboxRef(Protocol):
    """What a device needs to know of one running sandbox."""

    host_pid: int  # the harness's pid outside the sandbox's pid namespace
    inputs_address: int  # where the harness mapped the inputs (its host region on the CPU)
    pool_address: int  # where the harness mapped its device memory pool (CUDA; else 0)
    device_memory: Any  # the trusted side's handle on that pool (Device.sandbox_memory)


class InputStage(Protocol):
    """Where a grading's inputs are drawn and how the sandbox gets them.

    ``sets`` input sets fit at once: a window may time several calls, each on inputs of its
    own, so no call can reuse another's result.
    """

    nbytes: int  # bytes of one input set
    sets: int

    def fill(self, layout: Layout, seed: int, index: int = 0) -> None:
        """Draw set ``index``'s inputs from ``seed`` (the trusted side's secret)."""

    def staged(self, layout: Layout, seed: int) -> list[torch.Tensor] | None:
        """The inputs drawn from ``seed`` as they were staged, if a set holds them."""

    def regenerate(self, layout: Layout, seed: int) -> list[torch.Tensor]:
        """The same inputs drawn again, where the reference computes."""

    def placements(self, layout: Layout, index: int = 0) -> list[dict[str, Any]]:
        """Where set ``index``'s inputs lie, as ``go`` tells the sandbox."""

    def place(self, layout: Layout, sandbox: SandboxRef, index: int = 0) -> None:
        """Make set ``index`` visible to the frozen sandbox (raises Unplaceable)."""

    def placed(self, layout: Layout, sandbox: SandboxRef, index: int = 0) -> list[torch.Tensor]:
        """Set ``index``'s inputs as they are now, to see whether a call wrote them."""

    def placed_sample(
        self, layout: Layout, sandbox: SandboxRef, index: int, picks: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        """Set ``index``'s inputs as they are now at the row-major indices ``picks`` (one
        int64 tensor per input), reading nothing else of the sandbox's memory."""

    def scrub(self, sandbox: SandboxRef) -> None:
        """Clear all the sandbox can see of earlier inputs, before it loads new code (raises
        Unplaceable)."""

    def job_fields(self) -> dict[str, Any]:
        """What the harness's job file needs to find the inputs (CUDA: the descriptor)."""

    def shared_fds(self) -> tuple[int, ...]:
        """Descriptors every sandbox of the stage inherits (CUDA: the inputs' memory)."""

    def host_region_bytes(self) -> int:
        """Host memory the harness reserves for the inputs (0 where they are on a device)."""

    def pool_suits(self, layout: Layout, memory_bound: bool) -> bool:
        """Whether the timed inputs may be mixed from a pool drawn once per grading."""

    def use_pool(self, layout: Layout, seed: int) -> None: ...

    def stage_pool(self, layout: Layout, seed: int) -> None: ...

    def pool_staged(self) -> bool: ...

    def close(self) -> None:
        """Give back what the stage holds (CUDA: its device allocation)."""


@dataclass(frozen=True)
class WindowPlan:
    """What decides how many calls one timed window holds (Device.sets_per_window)."""

    set_bytes: int  # one call's inputs
    output_bytes: int  # one call's output, as the exercise's cost model puts it
    pool_bytes: int  # the sandbox's own device memory (0 on the CPU)
    seconds_per_call: float | None  # at the device's calibrated peaks (None: unknown)
    fixed_cost_s: float | None  # the empty window, from calibration (None: unknown)


@dataclass(frozen=True)
class CompletionWitness:
    """How the trusted side knows a call's GPU work had finished when the window closed."""

    kind: str  # "synchronous" (CPU) | "driver_lock" | "harness_sync"
    note: str  # for the report: what it means for the figures


class SandboxMemory(Protocol):
    """Device memory made for one sandbox (CUDA), which it inherits as descriptors."""

    def job_fields(self) -> dict[str, Any]: ...

    def fds(self) -> tuple[int, ...]: ...

    def started(self) -> None:
        """The sandbox has its own descriptors now: let go of ours."""

    def close(self) -> None: ...


class Device(Protocol):
    """A kind of device the engine grades on (graders/devices/cpu.py, cuda.py)."""

    kind: str  # "cpu" or "cuda": the device string the harness and the reference use

    def new_stage(self, input_bytes: int, sets: int) -> InputStage: ...

    def sets_per_window(self, plan: WindowPlan) -> int:
        """How many calls one timed window holds (see each device for why)."""

    def sandbox_memory(self, limit_mb: int) -> SandboxMemory | None:
        """Device memory for one more sandbox, of ``limit_mb`` (None: it has none of its own)."""

    def flush(self) -> None:
        """Make the next call start with cold caches; runs outside the window."""

    def resume(self, sandbox: SandboxRef) -> None:
        """Just after the thaw, before ``go`` (CUDA: lift the lock of the last settle)."""

    def settle(self, sandbox: SandboxRef, timeout_s: float) -> None:
        """After ``done``, before the freeze: wait until all the work the sandbox submitted
        has finished, by a means the sandbox cannot fake where the machine offers one."""

    def forget(self, sandbox: SandboxRef) -> None:
        """The sandbox is gone: drop what the device kept about it."""

    def completion(self) -> CompletionWitness: ...

    def read_output(
        self, described: dict[str, Any], sandbox: SandboxRef, cap_bytes: int
    ) -> torch.Tensor:
        """The output the sandbox described, read while it is frozen (raises
        OutputUnreadable); a view valid until the next read."""

    def read_sample(
        self, described: dict[str, Any], sandbox: SandboxRef, cap_bytes: int, flat: torch.Tensor
    ) -> torch.Tensor:
        """The output's values at the row-major indices ``flat`` (int64), read while the
        sandbox is frozen, touching no other byte of its memory (raises OutputUnreadable)."""

    def memory_problem(self, sandbox: SandboxRef, limit_mb: int) -> str | None:
        """A message for the student when the sandbox holds more device memory than
        ``limit_mb`` (None when within it, or when the device has no memory of its own)."""

    def containment(self) -> dict[str, str]:
        """What this device adds to the sandbox's containment, for the report."""

    def close(self) -> None: ...
