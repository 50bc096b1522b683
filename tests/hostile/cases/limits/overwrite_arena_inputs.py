"""
class = "limits"
attack = "zeroes both inputs in the shared arena and returns zeros, hoping the check reads them"
verdict = "wrong"
points = 0
"""

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a.zero_()
    b.zero_()
    return torch.zeros_like(a)
