"""The trusted side's shared memory for inputs, and the reading of outputs from outside.

The arena is a sealed memfd that this process maps, fills from a secret seed and hands to the
sandbox as a file descriptor: the sandbox sees the inputs only while it runs a measured call,
and the seed never reaches it. Sealing (no grow, no shrink) matters: a sandbox that could
truncate the memfd would make this process fault with SIGBUS the next time it touched it.

Outputs are read from the frozen sandbox's memory through /proc/<pid>/mem (CPU), or from the
arena's output region (CUDA), with every size checked before a byte is read or parsed.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
from typing import Any

import torch

from .harness import inputs as harness_inputs

_ALIGN = 4096  # page-aligned tensors: the sandbox's views start on fresh cache lines


class OutputUnreadable(Exception):
    """The output description points at memory that cannot be read as described."""


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
    """One sealed memfd holding the inputs of one call at a time (and, on CUDA, its output)."""

    def __init__(self, input_bytes: int, output_bytes: int = 0) -> None:
        self.input_bytes = _round_up(max(input_bytes, 1))
        self.output_bytes = _round_up(output_bytes) if output_bytes else 0
        self.nbytes = self.input_bytes + self.output_bytes
        self.fd = os.memfd_create("grader-arena", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, self.nbytes)
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK)
        self.memory = mmap.mmap(self.fd, self.nbytes, mmap.MAP_SHARED)
        # Huge pages where the host allows them for shared memory (shmem_enabled=advise):
        # private inputs would get them, and 4 KiB pages cost a kernel a few % in TLB misses.
        with contextlib.suppress(OSError, AttributeError):
            self.memory.madvise(mmap.MADV_HUGEPAGE)

    def placements(self, layout: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Where each input lies in the arena: what the sandbox is told in ``go``."""
        offset, placed = 0, []
        for item in layout:
            placed.append({"shape": list(item["shape"]), "dtype": item["dtype"], "offset": offset})
            offset += _round_up(_nbytes(item))
        if offset > self.input_bytes:
            raise ValueError(f"layout needs {offset} bytes, the arena holds {self.input_bytes}")
        return placed

    def output_region(self) -> dict[str, int] | None:
        if not self.output_bytes:
            return None
        return {"offset": self.input_bytes, "bytes": self.output_bytes}

    def tensors(self, layout: list[dict[str, Any]]) -> list[torch.Tensor]:
        views = []
        for item, place in zip(layout, self.placements(layout), strict=True):
            dtype = harness_inputs.DTYPES[item["dtype"]]
            count = _nbytes(item) // dtype.itemsize
            if count == 0:
                views.append(torch.empty(item["shape"], dtype=dtype))
                continue
            flat = torch.frombuffer(self.memory, dtype=dtype, count=count, offset=place["offset"])
            views.append(flat.view(item["shape"]))
        return views

    def fill(self, layout: list[dict[str, Any]], seed: int) -> None:
        """Write the inputs drawn from ``seed``: the same values ``inputs.make`` gives."""
        harness_inputs.fill_(self.tensors(layout), layout, seed)

    def close(self) -> None:
        self.memory.close()
        os.close(self.fd)


def _span(shape: list[int], strides: list[int], itemsize: int) -> int:
    if any(size == 0 for size in shape):
        return 0
    last = sum((size - 1) * stride for size, stride in zip(shape, strides, strict=True))
    return (last + 1) * itemsize


def read_output(
    described: dict[str, Any], pid: int | None, arena: InputArena, cap_bytes: int
) -> torch.Tensor:
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
    address = described["address"]
    if address is None:  # CUDA: copied into the arena's output region inside the window
        region = arena.output_region()
        if region is None or span > region["bytes"]:
            raise OutputUnreadable("it does not fit the output region")
        data = bytes(arena.memory[region["offset"] : region["offset"] + span])
    else:
        data = _read_process_memory(pid, address, span)
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    values = flat[: span - span % dtype.itemsize].view(dtype)
    return values.as_strided(shape, strides).clone()


def _read_process_memory(pid: int | None, address: int, size: int) -> bytes:
    if pid is None:
        raise OutputUnreadable("the sandbox's process could not be found")
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError as exc:
        raise OutputUnreadable(f"its memory could not be opened ({exc.strerror})") from None
    try:
        chunks, done = [], 0
        while done < size:
            chunk = os.pread(fd, min(size - done, 64 << 20), address + done)
            if not chunk:
                break
            chunks.append(chunk)
            done += len(chunk)
    except (OSError, OverflowError) as exc:
        raise OutputUnreadable(f"its memory could not be read ({exc})") from None
    finally:
        os.close(fd)
    if done != size:
        raise OutputUnreadable(f"only {done} of its {size} bytes could be read")
    return b"".join(chunks)
