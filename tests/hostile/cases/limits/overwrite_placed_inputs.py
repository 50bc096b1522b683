"""
class = "limits"
attack = "zeroes both inputs where the grader placed them and returns zeros"
verdict = "wrong"
points = 0
"""

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a.zero_()
    b.zero_()
    return torch.zeros_like(a)
