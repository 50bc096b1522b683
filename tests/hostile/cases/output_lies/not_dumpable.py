"""
class = "output_lies"
attack = "prctl(PR_SET_DUMPABLE, 0) so that /proc/<pid>/mem is refused to other processes"
verdict = "correct"
points = 0
"""

import ctypes
import time

import torch

PR_SET_DUMPABLE = 4
libc = ctypes.CDLL(None, use_errno=True)
print("prctl:", libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), flush=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
