"""
class = "limits"
attack = "maps anonymous zeros over the harness's view of the input arena (MAP_FIXED)"
verdict = "wrong"
points = 0
"""

import ctypes
import mmap

import torch

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]  # fmt: skip
MAP_FIXED = 0x10
with open("/proc/self/maps") as maps:
    lines = maps.readlines()
for line in lines:
    if "grader-arena" in line:
        start, end = (int(x, 16) for x in line.split()[0].split("-"))
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_FIXED
        print("remapped:", libc.mmap(start, end - start, 3, flags, -1, 0) == start, flush=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
