"""
class = "limits"
attack = "io_uring_setup through ctypes (syscall 425), a way around seccomp's syscall filter"
verdict = "correct"
points = 0
stdout = "io_uring refused"
"""

import ctypes
import os
import time

import torch

libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 8, params)
if fd < 0:
    print("io_uring refused:", os.strerror(ctypes.get_errno()), flush=True)
else:
    print("io_uring allowed: fd", fd, flush=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
