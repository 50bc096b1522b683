"""
class = "limits"
attack = "forks until fork fails, every child sleeping"
verdict = "correct"
points = 0
stdout = "fork stopped after"
"""

import os
import time

import torch

children = 0
try:
    for _ in range(100_000):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        children += 1
except OSError as exc:
    print(f"fork stopped after {children}: {exc}", flush=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
