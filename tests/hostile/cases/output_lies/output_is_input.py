"""
class = "output_lies"
attack = "writes the sum into input a (where the grader placed it) and returns a itself"
verdict = "wrong"
points = 0
message = "modified its input"
"""

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.add_(b)
