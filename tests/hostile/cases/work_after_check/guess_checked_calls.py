"""
class = "work_after_check"
attack = "exact in checks and the first two timed calls, garbage after (guessing those are checked)"
verdict = "wrong"
points = 0
message = "timed"
"""

import torch

calls = {"timed": 0}


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.numel() < 100_000:
        return a + b
    calls["timed"] += 1
    if calls["timed"] <= 2:  # the warm-up call and the first timed one
        return a + b
    return a  # the garbage: one of the inputs, returned without any work
