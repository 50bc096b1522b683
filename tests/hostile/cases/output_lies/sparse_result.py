"""
class = "output_lies"
attack = "returns a sparse COO tensor (a torch.Tensor with no strides and no single buffer)"
verdict = "error"
points = 0
"""

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a + b).to_sparse()
