"""
class = "more_than_one_core"
attack = "torch.set_num_threads(2) and sched_setaffinity to every core, then heavy threaded work"
verdict = "correct"
points = 0
stdout = "cores allowed: 1"
"""

import os
import time

import torch

try:
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
except OSError as exc:
    print("setaffinity refused:", exc)
torch.set_num_threads(max(2, os.cpu_count() or 1))
print("cores allowed:", len(os.sched_getaffinity(0)), flush=True)
weights = torch.randn(384, 384)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    for _ in range(8):  # work that threads well: slow on one core, fast on many
        torch.mm(weights, weights)
    time.sleep(0.05)  # slow on purpose: one core's honest figure earns nothing
    return a + b
