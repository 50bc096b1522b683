"""
class = "limits"
attack = "unmaps the region the grader copies inputs into (its address came in hello)"
verdict = "error"
points = 0
message = "could not copy the inputs into your program's memory"
"""

import ctypes

import torch

libc = ctypes.CDLL(None, use_errno=True)
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
unmapped = False


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    global unmapped
    c = a + b
    if not unmapped and a.numel():  # the output is computed; a and b are not touched again
        start = a.data_ptr() - a.data_ptr() % 4096
        unmapped = libc.munmap(start, 1 << 20) == 0
    return c
