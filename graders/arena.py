"""The trusted side's inputs, placed into the frozen sandbox, and its outputs, read from it.

The trusted side draws every call's inputs from its secret seed into a staging buffer of its
own, then copies them into a region of the sandbox's private memory while the whole sandbox
is frozen (graders/remote_memory.py). The harness reserved that region (anonymous memory,
huge pages, touched once) before any student code existed and said where it lies in its
``hello``. So the seed never reaches the sandbox, the sandbox sees the inputs only once a
measured call has begun, and a call reads them from the same kind of memory a plain
PyTorch program would (shared memory here gets 4 KiB pages only, which cost a
bandwidth-bound kernel about 3%).

The sandbox may since have unmapped the region, protected it or mapped something else
there: a copy that cannot be made is the submission's error (``Unplaceable``), and
whatever was mapped there can only receive the inputs, which is harmless.

Outputs are read from the frozen sandbox's memory the same way, with every size checked
before a byte is read or parsed.
"""

from __future__ import annotations

from typing import Any

import torch

from . import remote_memory
from .harness import inputs as harness_inputs

_ALIGN = 4096  # page-aligned tensors: the sandbox's views start on fresh cache lines


class OutputUnreadable(Exception):
    """The output description points at memory that cannot be read as described."""


class Unplaceable(Exception):
    """The sandbox's input region can no longer take the inputs (unmapped or protected)."""


def _nbytes(item: dict[str, Any]) -> int:
    count = 1
    for size in item["shape"]:
        count *= int(size)
    return count * harness_inputs.DTYPES[item["dtype"]].itemsize


def _round_up(value: int) -> int:
    return (value + _ALIGN - 1) // _ALIGN * _ALIGN


def layout_bytes(layout: list[dict[str, Any]]) -> int:
    return sum(_round_up(_nbytes(item)) for item in layout)


class InputArena:
    """The inputs of one call at a time, staged here and placed into sandboxes on demand."""

    def __init__(self, input_bytes: int) -> None:
        self.nbytes = _round_up(max(input_bytes, 1))
        self.staging = torch.empty(self.nbytes, dtype=torch.uint8)
        self.filled: tuple[str, int] | None = None  # (layout, seed) the staging buffer holds

    def placements(self, layout: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Where each input lies in the region: what the sandbox is told in ``go``."""
        offset, placed = 0, []
        for item in layout:
            placed.append({"shape": list(item["shape"]), "dtype": item["dtype"], "offset": offset})
            offset += _round_up(_nbytes(item))
        if offset > self.nbytes:
            raise ValueError(f"layout needs {offset} bytes, the arena holds {self.nbytes}")
        return placed

    def tensors(self, layout: list[dict[str, Any]]) -> list[torch.Tensor]:
        """The staged inputs, as tensors over this process's staging buffer."""
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

    def fill(self, layout: list[dict[str, Any]], seed: int) -> None:
        """Stage the inputs drawn from ``seed``: the same values ``inputs.make`` gives.

        The contenders of one timed round share a seed; they are drawn once.
        """
        key = (repr(layout), seed)
        if self.filled != key:
            self.filled = None  # half-written if the draw fails
            harness_inputs.fill_(self.tensors(layout), layout, seed)
            self.filled = key

    def place(self, layout: list[dict[str, Any]], pid: int, region: int) -> None:
        """Copy the staged inputs into the frozen sandbox's region at address ``region``."""
        size = layout_bytes(layout)
        try:
            remote_memory.write(pid, region, self.staging.data_ptr(), size)
        except remote_memory.RemoteMemoryError as exc:
            raise Unplaceable(str(exc)) from None

    def placed(self, layout: list[dict[str, Any]], pid: int, region: int) -> list[torch.Tensor]:
        """The inputs as they now are in the sandbox's region (to see whether a call wrote them)."""
        try:
            data = remote_memory.read(pid, region, layout_bytes(layout))
        except remote_memory.RemoteMemoryError as exc:
            raise Unplaceable(str(exc)) from None
        flat = (
            torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
        )
        return self._views(flat, layout)


def _span(shape: list[int], strides: list[int], itemsize: int) -> int:
    if any(size == 0 for size in shape):
        return 0
    last = sum((size - 1) * stride for size, stride in zip(shape, strides, strict=True))
    return (last + 1) * itemsize


def read_output(described: dict[str, Any], pid: int, cap_bytes: int) -> torch.Tensor:
    """The output the sandbox described, read by us while it is frozen.

    ``described`` has passed graders.protocol; its address, shape and strides are still the
    student's word, so the span is checked against ``cap_bytes`` before anything is read, and
    whatever is read is only ever interpreted as plain numbers of the stated dtype.
    """
    dtype = harness_inputs.DTYPES[described["dtype"]]
    shape, strides = described["shape"], described["strides"]
    span = _span(shape, strides, dtype.itemsize)
    if span > cap_bytes:
        raise OutputUnreadable(f"it spans {span} bytes, more than the {cap_bytes} allowed")
    if span == 0:
        return torch.empty(shape, dtype=dtype)
    try:
        data = remote_memory.read(pid, described["address"], span)
    except remote_memory.RemoteMemoryError as exc:
        raise OutputUnreadable(f"its memory could not be read: {exc}") from None
    flat = torch.frombuffer(data, dtype=torch.uint8)
    values = flat[: span - span % dtype.itemsize].view(dtype)
    return values.as_strided(shape, strides).clone()
