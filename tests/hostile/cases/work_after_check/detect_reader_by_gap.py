"""
class = "work_after_check"
attack = "garbage on timed calls unless the gap before was long (guessing a verified call is near)"
verdict = "wrong"
points = 0
"""

import time

import torch

last = {"returned": 0.0}


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    now = time.monotonic()
    gap = now - last["returned"]
    try:
        if a.numel() < 100_000 or gap > 0.5:
            return a + b
        return torch.zeros_like(a)
    finally:
        last["returned"] = time.monotonic()
