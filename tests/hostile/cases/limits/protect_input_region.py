"""
class = "limits"
attack = "makes the region the grader copies inputs into read-only, hoping a copy faults the grader"
verdict = "error"
points = 0
message = "could not copy the inputs into your program's memory"
"""

import ctypes

import torch

libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
protected = False


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    global protected
    if not protected and a.numel():  # the inputs of this call are in place, not the next
        start = a.data_ptr() - a.data_ptr() % 4096
        protected = libc.mprotect(start, 4096 * 16, 1) == 0  # PROT_READ
        print("protected:", protected, flush=True)
    return a + b
