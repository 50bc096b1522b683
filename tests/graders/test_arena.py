"""The trusted side's input arena and its reading of outputs from another process's memory."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os

import pytest
import torch

from graders import arena
from graders.harness import inputs

LAYOUT = [
    {"name": "a", "shape": [3, 5], "dtype": "float32", "dist": "normal", "scale": 1.0},
    {"name": "b", "shape": [7], "dtype": "int64", "dist": "randint", "scale": 9},
]


def test_inputs_filled_in_the_arena_equal_those_made_from_the_seed() -> None:
    shared = arena.InputArena(arena.layout_bytes(LAYOUT))
    try:
        shared.fill(LAYOUT, seed=1234)
        for got, want in zip(shared.tensors(LAYOUT), inputs.make(LAYOUT, 1234, "cpu"), strict=True):
            assert torch.equal(got, want)
        offsets = [place["offset"] for place in shared.placements(LAYOUT)]
        assert offsets == [0, 4096]  # page-aligned, in order
    finally:
        shared.close()


def test_the_sandbox_cannot_shrink_or_grow_the_arena() -> None:
    shared = arena.InputArena(8192)
    try:
        seals = fcntl.fcntl(shared.fd, fcntl.F_GET_SEALS)
        assert seals & fcntl.F_SEAL_SHRINK and seals & fcntl.F_SEAL_GROW
        with pytest.raises(OSError) as caught:
            os.ftruncate(shared.fd, 0)  # would fault the trusted process on its next touch
        assert caught.value.errno == errno.EPERM
    finally:
        shared.close()


def test_a_layout_larger_than_the_arena_is_refused() -> None:
    shared = arena.InputArena(4096)
    try:
        with pytest.raises(ValueError, match="bytes"):
            shared.placements(LAYOUT)
    finally:
        shared.close()


def _described(tensor: torch.Tensor) -> dict:
    return {
        "type": "Tensor",
        "shape": list(tensor.shape),
        "strides": list(tensor.stride()),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "device": "cpu",
        "address": tensor.data_ptr(),
    }


def test_outputs_are_read_from_process_memory_with_their_strides() -> None:
    shared = arena.InputArena(4096)
    try:
        base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
        view = base[:, 1:5:2]  # strided, offset into its storage
        got = arena.read_output(_described(view), os.getpid(), shared, cap_bytes=1 << 20)
        assert torch.equal(got, view)
        empty = torch.empty(0, 3)
        assert arena.read_output(_described(empty), os.getpid(), shared, 1 << 20).shape == (0, 3)
    finally:
        shared.close()


def test_descriptions_that_lie_are_refused_before_reading() -> None:
    shared = arena.InputArena(4096)
    try:
        huge = {**_described(torch.zeros(2)), "shape": [1 << 40], "strides": [1]}
        with pytest.raises(arena.OutputUnreadable, match="more than"):
            arena.read_output(huge, os.getpid(), shared, cap_bytes=1 << 20)
        unmapped = {**_described(torch.zeros(2)), "address": 16}  # page zero is never mapped
        with pytest.raises(arena.OutputUnreadable, match="could not be read"):
            arena.read_output(unmapped, os.getpid(), shared, cap_bytes=1 << 20)
        with pytest.raises(arena.OutputUnreadable, match="not be found"):
            arena.read_output(_described(torch.zeros(2)), None, shared, cap_bytes=1 << 20)
    finally:
        shared.close()


def test_reading_never_sees_more_than_the_span() -> None:
    # Two floats described, a third right after them is a secret the read must not include.
    buffer = (ctypes.c_float * 3)(1.0, 2.0, 99.0)
    shared = arena.InputArena(4096)
    try:
        described = {
            "type": "Tensor",
            "shape": [2],
            "strides": [1],
            "dtype": "float32",
            "device": "cpu",
            "address": ctypes.addressof(buffer),
        }
        got = arena.read_output(described, os.getpid(), shared, cap_bytes=8)
        assert got.tolist() == [1.0, 2.0]
    finally:
        shared.close()
