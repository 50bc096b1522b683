"""
class = "baseline"
attack = "sleeps 3 s at import to inflate the start-up the empty call might be measured in"
verdict = "correct"
points = 0
"""

import time

import torch

time.sleep(3)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
