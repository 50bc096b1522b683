"""
class = "forged_times"
attack = "replaces harness.timing.Timer.stop so every call claims to take 1 microsecond"
verdict = "correct"
points = 0
flags = ["timing_inconsistent"]
"""

import sys
import time

import torch

timing = sys.modules["harness.timing"]
timing.Timer.stop = lambda self: 1_000


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)  # slow on purpose: an honest figure earns nothing
    return a + b
