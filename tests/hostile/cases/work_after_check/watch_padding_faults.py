"""
class = "work_after_check"
attack = "pads its output rows with untouched pages; once one is faulted in (read), returns stale"
verdict = "correct"
points = 0
exercise = "softmax-pool"
compare = true

How it would gain: the grader read a checked output by copying its whole span, padding
between rows included. This submission lays its output rows 12 KiB apart (8 KiB of values,
then a page it never touches), which the grader accepts (the span is 1.5 times the values).
After each call it asks the kernel (mincore) whether any padding page of the last output
is now resident: if so, the grader read that output, so the call was a checked one. One
call was checked at random, and the one the phase stopped on: once the random one is seen,
it returns the last output again at no cost (stale) until the call the phase could stop on
(its mix of slow and fast calls is too noisy to stop before max_runs, which it knows from
exercise.toml), then works again for that one.

Against the engine before the fix (242c469) it did see reads (the padding was faulted in),
but in 9 gradings its stale answers were either caught or too few to move the median: the
red team's version of this gained once. It stays as the check that no padding is read.

What the engine must do: read only an output's values (no padding page is ever faulted in,
so this submission never sees a read and does its slow work every time: correct, 0 points),
and spot-check every timed call, so that the stale answers would fail even if it did.
"""

import ctypes
import mmap

import torch

TIMED = 1 << 20  # the timed size has 4M elements; the check sizes are all below 70k
PAGE = 4096
libc = ctypes.CDLL(None)
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
WARMUP, MAX_RUNS = 1, 8  # the quick copy's [timing]: a noisy phase stops on kept call 8
state: dict = {"last": None, "region": None, "address": 0, "rows": 0, "read": False, "calls": 0}


def slow_softmax(x: torch.Tensor) -> torch.Tensor:
    """Correct and slow: float64, a row at a time, its exp 64 values at a time."""
    out = torch.empty_like(x)
    for i, row in enumerate(x.double()):
        shifted = row - row.max()
        for start in range(0, shifted.numel(), 64):
            shifted[start : start + 64].exp_()
        out[i] = shifted / shifted.sum()
    return out


def padding_was_read() -> bool:
    rows = state["rows"]
    if not rows:
        return False
    vector = ctypes.create_string_buffer(rows * 3)
    if libc.mincore(state["address"], rows * 3 * PAGE, vector) != 0:
        return False
    return any(vector.raw[row * 3 + 2] & 1 for row in range(rows))


def padded_output(rows: int, cols: int) -> torch.Tensor:
    """A (rows, cols) view with a row stride of 12 KiB: 8 KiB of values, 4 KiB never touched."""
    region = mmap.mmap(-1, rows * 3 * PAGE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    address = ctypes.addressof(ctypes.c_char.from_buffer(region))
    state.update(region=region, address=address, rows=rows)
    flat = torch.frombuffer(region, dtype=torch.float32)
    return flat.as_strided((rows, cols), (3 * PAGE // 4, 1))


def softmax(x: torch.Tensor) -> torch.Tensor:
    if x.numel() < TIMED or x.shape[-1] * 4 != 2 * PAGE:
        return slow_softmax(x)
    state["calls"] += 1
    state["read"] = state["read"] or padding_was_read()
    if state["read"] and state["calls"] - WARMUP < MAX_RUNS:
        return state["last"]  # stale: the grader is believed to have had its look
    out = padded_output(*x.shape)
    out.copy_(slow_softmax(x))
    state["last"] = out
    return out
