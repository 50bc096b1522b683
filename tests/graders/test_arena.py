"""The trusted side's inputs, placed into another process's memory, and outputs read from it."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from graders.devices.base import OutputUnreadable, Unplaceable
from graders.grading import arena
from graders.harness import inputs

LAYOUT = [
    {"name": "a", "shape": [3, 5], "dtype": "float32", "dist": "normal", "scale": 1.0},
    {"name": "b", "shape": [7], "dtype": "int64", "dist": "randint", "scale": 9},
]

# A stand-in for the harness: reserves two pages, says where, then protects them on request.
_HOLDER = """
import ctypes, mmap, sys
region = mmap.mmap(-1, 8192, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
address = ctypes.addressof(ctypes.c_char.from_buffer(region))
print(address, flush=True)
if sys.stdin.readline().strip() == "protect":
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    print(libc.mprotect(address, 8192, 1), flush=True)  # PROT_READ
sys.stdin.readline()
"""


@pytest.fixture
def holder() -> Iterator[tuple[subprocess.Popen[str], int]]:
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    try:
        yield child, int(child.stdout.readline())
    finally:
        child.kill()
        child.wait()


def _at(pid: int, region: int) -> SimpleNamespace:
    """The two things the arena needs to know of a sandbox: its pid and its input region."""
    return SimpleNamespace(host_pid=pid, inputs_address=region)


def test_inputs_staged_in_the_arena_equal_those_made_from_the_seed() -> None:
    staged = arena.InputArena(arena.layout_bytes(LAYOUT))
    staged.fill(LAYOUT, seed=1234)
    for got, want in zip(staged.tensors(LAYOUT), inputs.make(LAYOUT, 1234, "cpu"), strict=True):
        assert torch.equal(got, want)
    offsets = [place["offset"] for place in staged.placements(LAYOUT)]
    assert offsets == [0, 4096]  # page-aligned, in order


def test_inputs_are_placed_into_the_other_process_and_read_back_as_they_are(
    holder: tuple[subprocess.Popen[str], int],
) -> None:
    child, region = holder
    staged = arena.InputArena(arena.layout_bytes(LAYOUT))
    staged.fill(LAYOUT, seed=77)
    staged.place(LAYOUT, _at(child.pid, region))
    made = inputs.make(LAYOUT, 77, "cpu")
    for got, want in zip(staged.placed(LAYOUT, _at(child.pid, region)), made, strict=True):
        assert torch.equal(got, want)
    staged.fill(LAYOUT, seed=78)  # the staging buffer changes; the placed copy does not
    assert torch.equal(staged.placed(LAYOUT, _at(child.pid, region))[0], made[0])


def test_a_region_the_sandbox_protected_cannot_take_the_inputs(
    holder: tuple[subprocess.Popen[str], int],
) -> None:
    child, region = holder
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("protect\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "0"
    staged = arena.InputArena(arena.layout_bytes(LAYOUT))
    staged.fill(LAYOUT, seed=5)
    with pytest.raises(Unplaceable, match="could not be written"):
        staged.place(LAYOUT, _at(child.pid, region))
    with pytest.raises(Unplaceable, match="not an address"):
        staged.place(LAYOUT, _at(child.pid, 0))


def test_a_layout_larger_than_the_arena_is_refused() -> None:
    staged = arena.InputArena(4096)
    with pytest.raises(ValueError, match="bytes"):
        staged.placements(LAYOUT)


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
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    view = base[:, 1:5:2]  # strided, offset into its storage
    assert torch.equal(arena.read_output(_described(view), os.getpid(), cap_bytes=1 << 20), view)
    empty = torch.empty(0, 3)
    assert arena.read_output(_described(empty), os.getpid(), 1 << 20).shape == (0, 3)


def test_descriptions_that_lie_are_refused_before_reading() -> None:
    huge = {**_described(torch.zeros(2)), "shape": [1 << 40], "strides": [1]}
    with pytest.raises(OutputUnreadable, match="more than"):
        arena.read_output(huge, os.getpid(), cap_bytes=1 << 20)
    unmapped = {**_described(torch.zeros(2)), "address": 16}  # page zero is never mapped
    with pytest.raises(OutputUnreadable, match="could not be read"):
        arena.read_output(unmapped, os.getpid(), cap_bytes=1 << 20)
    gone = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process has this pid
    with pytest.raises(OutputUnreadable, match="could not be read"):
        arena.read_output(_described(torch.zeros(2)), gone, cap_bytes=1 << 20)


def test_an_output_spread_thin_by_its_strides_is_refused_before_reading() -> None:
    values = torch.zeros(1 << 20, dtype=torch.float32)  # 4 MiB behind the view
    thin = values[:: 1 << 16]  # 16 floats over 4 MiB: the read would copy all of it
    with pytest.raises(OutputUnreadable, match=r"spread over .* contiguous"):
        arena.read_output(_described(thin), os.getpid(), cap_bytes=1 << 30)
    every_other = values[: 1 << 10 : 2]  # twice its size: a sliced view is read as it is
    assert torch.equal(
        arena.read_output(_described(every_other), os.getpid(), cap_bytes=1 << 30), every_other
    )


def test_a_sample_of_thousands_of_values_is_read_exactly_in_order() -> None:
    # More pieces than one process_vm_readv takes (1024), of a view with gaps between rows.
    rows = torch.randn(300, 64)[:, 5:50]
    flat = torch.randint(0, rows.numel(), (3000,), generator=torch.Generator().manual_seed(7))
    got = arena.read_sample(_described(rows), os.getpid(), 1 << 20, flat)
    assert torch.equal(got, rows.reshape(-1)[flat])
    beyond = {**_described(rows), "address": 1 << 63}  # past every user-space address
    with pytest.raises(OutputUnreadable, match="not an address"):
        arena.read_sample(beyond, os.getpid(), 1 << 20, flat)


def test_reading_never_sees_more_than_the_span() -> None:
    # Two floats described, a third right after them is a secret the read must not include.
    buffer = (ctypes.c_float * 3)(1.0, 2.0, 99.0)
    described = {
        "type": "Tensor",
        "shape": [2],
        "strides": [1],
        "dtype": "float32",
        "device": "cpu",
        "address": ctypes.addressof(buffer),
    }
    assert arena.read_output(described, os.getpid(), cap_bytes=8).tolist() == [1.0, 2.0]


POOLED = [
    {"name": "x", "shape": [1024, 4096], "dtype": "float32", "dist": "normal", "scale": 3.0},
    {"name": "y", "shape": [1024, 4096], "dtype": "float32", "dist": "offset", "scale": 2.0,
     "shift": 5.0},
]  # fmt: skip


def test_pooled_timed_inputs_share_no_value_between_calls() -> None:
    """Issue 29, class 1: a kernel that caches results per value or per position across
    calls finds nothing to reuse, because every call's values are a fresh secret mix."""
    assert arena.window_pool_suits(POOLED, memory_bound=True)
    stage = arena.InputArena(arena.layout_bytes(POOLED))
    stage.use_pool(POOLED, seed=11)
    stage.fill(POOLED, 1)
    first = [t.clone() for t in stage.tensors(POOLED)]
    stage.fill(POOLED, 2)
    second = stage.tensors(POOLED)
    fresh = [inputs.make(POOLED, seed, "cpu") for seed in (1, 2)]

    def shared(one: torch.Tensor, other: torch.Tensor) -> int:
        seen = set(one.flatten()[:200_000].tolist())
        return sum(value in seen for value in other.flatten()[:200_000].tolist())

    for index, (before, after) in enumerate(zip(first, second, strict=True)):
        # Equal float32 values by coincidence only, as many as two fresh draws share (about
        # 1 %); windows of one pool shared 87.5 %.
        chance = shared(fresh[0][index], fresh[1][index])
        assert shared(before, after) < 1.5 * chance + 100
    # The reference sees exactly what the sandbox got, whether staged or drawn again.
    staged = stage.staged(POOLED, 2)
    assert staged is not None
    again = stage.regenerate(POOLED, 2)
    for one, other in zip(staged, again, strict=True):
        assert torch.equal(one, other)


def test_a_pooled_mix_is_a_sample_of_the_declared_distribution() -> None:
    stage = arena.InputArena(arena.layout_bytes(POOLED))
    stage.use_pool(POOLED, seed=5)
    for seed in range(4):
        stage.fill(POOLED, seed)
        x, y = stage.tensors(POOLED)
        assert abs(float(x.mean())) < 0.02 and abs(float(x.std()) - 3.0) < 0.02
        assert abs(float(y.mean()) - 5.0) < 0.02 and abs(float(y.std()) - 2.0) < 0.02
        # Neighbours and the two inputs are uncorrelated, as fresh draws would be.
        flat = x.flatten()
        assert abs(float(torch.corrcoef(torch.stack([flat[:-1], flat[1:]]))[0, 1])) < 0.01
        assert abs(float(torch.corrcoef(torch.stack([flat, y.flatten()]))[0, 1])) < 0.01


def test_only_normal_family_floats_are_pooled() -> None:
    for dist in ("uniform", "randint", "near_constant_rows", "extreme_scale"):
        layout = [{**POOLED[0], "dist": dist}]
        assert not arena.window_pool_suits(layout, memory_bound=True)
    assert not arena.window_pool_suits([{**POOLED[0], "dtype": "int32"}], memory_bound=True)
    assert not arena.window_pool_suits(POOLED, memory_bound=False)


# A stand-in for a submission whose output rows are padded with whole pages it never
# touches; once told, it says which of those pages are resident (mincore).
_PADDED = """
import ctypes, mmap, sys
PAGE, ROWS = 4096, 3
region = mmap.mmap(-1, ROWS * 3 * PAGE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
address = ctypes.addressof(ctypes.c_char.from_buffer(region))
for row in range(ROWS):  # two pages of values, then a page of padding
    values = (ctypes.c_float * 2048).from_address(address + row * 3 * PAGE)
    for i in range(2048):
        values[i] = row * 10000 + i
print(address, flush=True)
sys.stdin.readline()
libc = ctypes.CDLL(None)
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
vector = ctypes.create_string_buffer(ROWS * 3)
assert libc.mincore(address, ROWS * 3 * PAGE, vector) == 0
print(sum(vector.raw[row * 3 + 2] & 1 for row in range(ROWS)), flush=True)
sys.stdin.readline()
"""


def test_only_an_outputs_values_are_read_never_the_padding_between_them() -> None:
    """Issue 29, class 2: a read that faulted in padding inside the output's span told the
    submission which call was checked. Full reads and spot checks read the values only."""
    child = subprocess.Popen(
        [sys.executable, "-c", _PADDED], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        address = int(child.stdout.readline())
        described = {
            "type": "Tensor",
            "shape": [3, 2048],
            "strides": [3072, 1],
            "dtype": "float32",
            "device": "cpu",
            "address": address,
        }
        want = torch.arange(2048, dtype=torch.float32) + 10000 * torch.arange(3.0)[:, None]
        got = arena.read_output(described, child.pid, cap_bytes=1 << 20)
        assert torch.equal(got, want)
        picks = torch.randint(0, want.numel(), (500,))
        sample = arena.read_sample(described, child.pid, 1 << 20, picks)
        assert torch.equal(sample, want.reshape(-1)[picks])
        child.stdin.write("\n")
        child.stdin.flush()
        assert int(child.stdout.readline()) == 0  # no padding page was faulted in
    finally:
        child.kill()
        child.wait()


def test_an_output_whose_values_overlap_is_refused() -> None:
    values = torch.arange(10, dtype=torch.float32)
    overlapping = values.as_strided((3, 4), (1, 1))
    with pytest.raises(OutputUnreadable, match="overlap"):
        arena.read_output(_described(overlapping), os.getpid(), cap_bytes=1 << 20)
    broadcast = values[:4].expand(3, 4)  # stride 0: one place read for each column
    assert torch.equal(arena.read_output(_described(broadcast), os.getpid(), 1 << 20), broadcast)
    transposed = torch.arange(12.0).reshape(3, 4).t()
    assert torch.equal(arena.read_output(_described(transposed), os.getpid(), 1 << 20), transposed)
