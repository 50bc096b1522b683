"""The trusted side's inputs, placed into the frozen sandbox, and its outputs, read from it.

The trusted side draws every call's inputs from its secret seed into a staging buffer of its
own, then copies them into a region of the sandbox's private memory while the whole sandbox
is frozen (graders/sandbox/remote_memory.py). The harness reserved that region (anonymous memory,
huge pages, touched once) before any student code existed and said where it lies in its
``hello``. So the seed never reaches the sandbox, the sandbox sees the inputs only once a
measured call has begun, and a call reads them from the same kind of memory a plain
PyTorch program would (shared memory here gets 4 KiB pages only, which cost a
bandwidth-bound kernel about 3%).

The sandbox may since have unmapped the region, protected it or mapped something else
there: a copy that cannot be made is the submission's error (``Unplaceable``), and
whatever was mapped there can only receive the inputs, which is harmless.

Large inputs of a memory-bound exercise's timed phase are mixed from a :class:`WindowPool`
instead of drawn afresh per call: drawing 16M normal floats costs about 55 ms of CPU, the mix
about 20 ms, and the draws were most of a grading's wall time. The pool is two standard
normal pools per input, drawn once per grading from a secret seed, each a little longer than
the input. A call's input is ``cos(t) * A[i + a] + sin(t) * B[i + b]`` (then scaled and
shifted as the exercise declares), with the offsets ``a``, ``b`` and the angle ``t`` drawn
from the call's secret seed. Two independent standard normals mixed so are exactly one
standard normal, independent of its neighbours, so each input is still an i.i.d. sample of
its distribution. And no value of one call is a value of another: a kernel that keeps
results per value or per position from earlier calls (a cached ``erf`` or ``exp``) finds
nothing to reuse, and a function of ``cos(t) * A + sin(t) * B`` cannot be had from the same
function of ``A`` and ``B`` for less than computing it. The angle stays at least 22.5
degrees away from either axis so neither pool's values come through nearly unchanged.
Compute-bound exercises and row-structured distributions are drawn fresh per call (see
:func:`window_pool_suits`).

Outputs are read from the frozen sandbox's memory the same way, with every size checked
before a byte is read or parsed.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from graders.devices.base import (
    Layout,
    OutputUnreadable,
    SandboxRef,
    Unplaceable,
    checked_span,
    element_offsets,
    element_pieces,
)
from graders.harness import inputs as harness_inputs
from graders.sandbox import remote_memory

_ALIGN = 4096  # page-aligned tensors: the sandbox's views start on fresh cache lines
# Normal-family distributions only: their values are a mix of standard normals, scaled and
# shifted. The rest (uniform, randint, the row-structured ones) are drawn fresh.
_MIXABLE = ("normal", "large", "offset")
# Below this a fresh draw is cheap enough (a few ms) that reuse is not worth a thought.
WINDOW_POOL_MIN_BYTES = 16 << 20
_SCRUB_CHUNK = 4 << 20  # zeros written per copy when a region is scrubbed
# The mixing angle: within 22.5 degrees of a diagonal, in any quadrant.
_ANGLE_FROM, _ANGLE_SPAN = math.pi / 8, math.pi / 4


def _nbytes(item: dict[str, Any]) -> int:
    count = 1
    for size in item["shape"]:
        count *= int(size)
    return count * harness_inputs.DTYPES[item["dtype"]].itemsize


def _round_up(value: int) -> int:
    return (value + _ALIGN - 1) // _ALIGN * _ALIGN


def layout_bytes(layout: list[dict[str, Any]]) -> int:
    return sum(_round_up(_nbytes(item)) for item in layout)


def window_pool_suits(layout: list[dict[str, Any]], memory_bound: bool) -> bool:
    """Whether a timed layout may use a :class:`WindowPool` (see the module docstring)."""
    return (
        memory_bound
        and layout_bytes(layout) >= WINDOW_POOL_MIN_BYTES
        and all(
            item.get("dist", "normal") in _MIXABLE
            and harness_inputs.DTYPES[item["dtype"]].is_floating_point
            for item in layout
        )
    )


class WindowPool:
    """One grading's secret pools for a layout; each call's inputs are fresh mixes of them."""

    def __init__(self, layout: list[dict[str, Any]], seed: int) -> None:
        self.key = repr(layout)
        self.counts = [
            _nbytes(item) // harness_inputs.DTYPES[item["dtype"]].itemsize for item in layout
        ]
        # An eighth longer than each input: millions of possible offsets per input and call.
        self.slack = [max(count // 8, 4096) for count in self.counts]
        flat = [
            {"shape": [count + slack], "dtype": "float32", "dist": "normal", "scale": 1.0}
            for count, slack in zip(self.counts, self.slack, strict=True)
        ]
        pools = harness_inputs.make(flat + flat, seed, "cpu")
        self.first, self.second = pools[: len(flat)], pools[len(flat) :]

    def fill(self, tensors: list[torch.Tensor], layout: list[dict[str, Any]], seed: int) -> None:
        """Write the inputs of the call whose secret seed is ``seed`` into ``tensors``."""
        generator = torch.Generator().manual_seed(seed)

        def draw(high: int) -> int:
            return int(torch.randint(0, high, (1,), generator=generator))

        for target, item, first, second, count, slack in zip(
            tensors, layout, self.first, self.second, self.counts, self.slack, strict=True
        ):
            quadrant = draw(4) * math.pi / 2
            angle = quadrant + _ANGLE_FROM + _ANGLE_SPAN * float(torch.rand(1, generator=generator))
            a, b = draw(slack + 1), draw(slack + 1)
            scale = float(item.get("scale", 1.0))
            shift = float(item.get("shift", 0.0)) if item.get("dist") == "offset" else 0.0
            one = first[a : a + count].view(target.shape)
            other = second[b : b + count].view(target.shape)
            mixed = target if target.dtype == torch.float32 else torch.empty_like(one)
            torch.mul(one, math.cos(angle) * scale, out=mixed)
            mixed.add_(other, alpha=math.sin(angle) * scale)
            if shift:
                mixed.add_(shift)
            if mixed is not target:
                target.copy_(mixed)


class InputArena:
    """The inputs of one call at a time, staged here and placed into sandboxes on demand: the
    CPU's :class:`graders.devices.base.InputStage` (one set: a CPU window holds one call)."""

    sets = 1

    def __init__(self, input_bytes: int) -> None:
        self.nbytes = _round_up(max(input_bytes, 1))
        self.staging = torch.empty(self.nbytes, dtype=torch.uint8)
        self.filled: tuple[str, int] | None = None  # (layout, seed) the staging buffer holds
        self.pool: WindowPool | None = None
        self.staged_pool: WindowPool | None = None  # drawn ahead for the next grading
        # Reads of the sandbox's inputs during checks: views valid until the next read.
        self.inputs_back = ReadBuffer()

    def pool_staged(self) -> bool:
        return self.staged_pool is not None

    def close(self) -> None:
        return None  # host memory: freed with the object

    def stage_pool(self, layout: list[dict[str, Any]], seed: int) -> None:
        """Draw the next grading's pool now, while no grading runs (graders/grading/warm.py)."""
        self.staged_pool = WindowPool(layout, seed)

    def use_pool(self, layout: list[dict[str, Any]], seed: int) -> None:
        """From now on, fills of ``layout`` take windows of a fresh pool: the one drawn ahead,
        used by this grading only, or else one drawn now from ``seed``."""
        staged, self.staged_pool = self.staged_pool, None
        fresh = staged is not None and staged.key == repr(layout)
        self.pool = staged if fresh and staged is not None else WindowPool(layout, seed)
        self.filled = None

    def job_fields(self) -> dict[str, Any]:
        return {}

    def shared_fds(self) -> tuple[int, ...]:
        return ()

    def host_region_bytes(self) -> int:
        return self.nbytes

    def pool_suits(self, layout: Layout, memory_bound: bool) -> bool:
        return window_pool_suits(layout, memory_bound)

    def staged(self, layout: Layout, seed: int) -> list[torch.Tensor] | None:
        return self.tensors(layout) if self.filled == (repr(layout), seed) else None

    def regenerate(self, layout: Layout, seed: int) -> list[torch.Tensor]:
        if self.pool is not None and self.pool.key == repr(layout):
            tensors = harness_inputs.allocate(layout, "cpu")
            self.pool.fill(tensors, layout, seed)
            return tensors
        return harness_inputs.make(layout, seed, "cpu")

    def placements(self, layout: Layout, index: int = 0) -> list[dict[str, Any]]:
        """Where each input lies in the region: what the sandbox is told in ``go``."""
        offset, placed = 0, []
        for item in layout:
            placed.append({"shape": list(item["shape"]), "dtype": item["dtype"], "offset": offset})
            offset += _round_up(_nbytes(item))
        if offset > self.nbytes:
            raise ValueError(f"layout needs {offset} bytes, the arena holds {self.nbytes}")
        return placed

    def tensors(self, layout: list[dict[str, Any]]) -> list[torch.Tensor]:
        """The staged inputs: views of the staging buffer."""
        return self._views(self.staging, layout)

    def _views(self, buffer: torch.Tensor, layout: list[dict[str, Any]]) -> list[torch.Tensor]:
        views = []
        for item, place in zip(layout, self.placements(layout), strict=True):
            dtype = harness_inputs.DTYPES[item["dtype"]]
            count = _nbytes(item) // dtype.itemsize
            if count == 0:
                views.append(torch.empty(item["shape"], dtype=dtype))
                continue
            start = place["offset"]
            flat = buffer[start : start + count * dtype.itemsize].view(dtype)
            views.append(flat.view(item["shape"]))
        return views

    def fill(self, layout: Layout, seed: int, index: int = 0) -> None:
        """Stage the inputs drawn from ``seed``: the same values ``inputs.make`` gives, or
        with a pool in use for ``layout``, that pool's mix for ``seed``.

        The contenders of one timed round share a seed; they are drawn once.
        """
        key = (repr(layout), seed)
        if self.filled == key:
            return
        self.filled = None  # half-written if the draw fails
        if self.pool is not None and self.pool.key == key[0]:
            self.pool.fill(self.tensors(layout), layout, seed)
        else:
            harness_inputs.fill_(self.tensors(layout), layout, seed)
        self.filled = key

    def place(self, layout: Layout, sandbox: SandboxRef, index: int = 0) -> None:
        """Copy the staged inputs into the frozen sandbox's input region."""
        pid, region = sandbox.host_pid, sandbox.inputs_address
        try:
            remote_memory.write(pid, region, self.staging.data_ptr(), layout_bytes(layout))
        except remote_memory.RemoteMemoryError as exc:
            raise Unplaceable(str(exc)) from None

    def scrub(self, sandbox: SandboxRef) -> None:
        """Zero the sandbox's whole input region, before it loads new code: a runner started
        ahead had the previous grading's inputs (windows of its pool) copied in by its empty
        calls, and one student's data must never reach the next."""
        zeros = torch.zeros(min(_SCRUB_CHUNK, self.nbytes), dtype=torch.uint8)
        try:
            for start in range(0, self.nbytes, zeros.numel()):
                size = min(zeros.numel(), self.nbytes - start)
                remote_memory.write(
                    sandbox.host_pid, sandbox.inputs_address + start, zeros.data_ptr(), size
                )
        except remote_memory.RemoteMemoryError as exc:
            raise Unplaceable(str(exc)) from None

    def placed_sample(
        self, layout: Layout, sandbox: SandboxRef, index: int, picks: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        return read_inputs_sample(layout, self.placements(layout), sandbox, picks)

    def placed(self, layout: Layout, sandbox: SandboxRef, index: int = 0) -> list[torch.Tensor]:
        """The inputs as they now are in the sandbox's region (to see whether a call wrote them)."""
        try:
            flat = self.inputs_back.read(
                sandbox.host_pid, sandbox.inputs_address, layout_bytes(layout)
            )
        except remote_memory.RemoteMemoryError as exc:
            raise Unplaceable(str(exc)) from None
        return self._views(flat, layout)


def read_inputs_sample(
    layout: Layout,
    placements: list[dict[str, Any]],
    sandbox: SandboxRef,
    picks: list[torch.Tensor],
) -> list[torch.Tensor]:
    """The placed inputs' values at the row-major indices ``picks`` (one tensor per input),
    read from the frozen sandbox's region and nothing else of its memory."""
    values = []
    for item, place, pick in zip(layout, placements, picks, strict=True):
        dtype = harness_inputs.DTYPES[item["dtype"]]
        got = torch.empty(pick.numel(), dtype=dtype)
        start, size = sandbox.inputs_address + place["offset"], dtype.itemsize
        try:
            remote_memory.read_spaced(sandbox.host_pid, start, pick, size, size, got.data_ptr())
        except remote_memory.RemoteMemoryError as exc:
            raise Unplaceable(str(exc)) from None
        values.append(got)
    return values


class ReadBuffer:
    """One buffer of ours, faulted in once and reused by every read of one kind (the inputs
    read back, or the outputs) of an arena's gradings. A fresh 64-128 MiB buffer per verified
    call cost 70-110 ms of page faults on a KVM guest here, huge pages asked for or not; a
    reused one about 18 ms for 128 MiB. What :meth:`read` returns is a view of the buffer,
    valid until the next read."""

    def __init__(self) -> None:
        self.buffer = torch.empty(0, dtype=torch.uint8)

    def space(self, size: int) -> torch.Tensor:
        """The first ``size`` bytes of the buffer, grown (and faulted in) when too small."""
        if self.buffer.numel() < size:
            self.buffer = torch.zeros(size, dtype=torch.uint8)  # zeroed: faulted in now, once
        return self.buffer[:size]

    def read(self, pid: int, address: int, size: int) -> torch.Tensor:
        view = self.space(size)
        remote_memory.read_into(pid, address, view.data_ptr(), size)
        return view


def read_output(
    described: dict[str, Any], pid: int, cap_bytes: int, into: ReadBuffer | None = None
) -> torch.Tensor:
    """The output the sandbox described, read by us while it is frozen.

    ``described`` has passed graders.sandbox.protocol; its address, shape and strides are still the
    student's word, so the span is checked against ``cap_bytes`` before anything is read, and
    whatever is read is only ever interpreted as plain numbers of the stated dtype. Only the
    bytes of its values are read (:func:`graders.devices.base.element_pieces`), never what
    lies between them. Read ``into`` a buffer, it is a view of that buffer, valid until its
    next read; else a tensor of its own.
    """
    dtype, shape, strides, span = checked_span(described, cap_bytes)
    if span == 0:
        return torch.empty(shape, dtype=dtype)
    pieces = element_pieces(shape, strides)
    piece_bytes = pieces.piece * dtype.itemsize
    size = pieces.starts.numel() * piece_bytes
    buffer = into.space(size) if into is not None else torch.empty(size, dtype=torch.uint8)
    address = described["address"]
    try:
        remote_memory.read_spaced(
            pid, address, pieces.starts, dtype.itemsize, piece_bytes, buffer.data_ptr()
        )
    except remote_memory.RemoteMemoryError as exc:
        raise OutputUnreadable(f"its memory could not be read: {exc}") from None
    values = pieces.assemble(buffer.view(dtype))
    return values if into is not None else values.clone()


def read_sample(
    described: dict[str, Any], pid: int, cap_bytes: int, flat: torch.Tensor
) -> torch.Tensor:
    """The output's values at the row-major indices ``flat``, and only those bytes, read
    while the sandbox is frozen: a spot check of a timed call (graders/grading/phases.py)."""
    dtype, shape, strides, _ = checked_span(described, cap_bytes)
    values = torch.empty(flat.numel(), dtype=dtype)
    if flat.numel() == 0:
        return values
    offsets = element_offsets(shape, strides, flat)
    address, size = described["address"], dtype.itemsize
    try:
        remote_memory.read_spaced(pid, address, offsets, size, size, values.data_ptr())
    except remote_memory.RemoteMemoryError as exc:
        raise OutputUnreadable(f"its memory could not be read: {exc}") from None
    return values
