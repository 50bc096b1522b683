"""
class = "freeze"
attack = "forks during every call; the children compute and write the output after the return"
verdict = "wrong"
points = 0
"""

import mmap
import os
import time

import torch

shared = mmap.mmap(-1, 64 << 20)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.frombuffer(shared, dtype=torch.float32, count=a.numel()) if a.numel() else a + b
    out.fill_(7.0)
    if a.numel() and os.fork() == 0:
        time.sleep(0.02)
        torch.add(a, b, out=out)
        os._exit(0)
    return out
