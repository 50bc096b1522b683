"""
class = "output_lies"
attack = "returns a view whose stride spreads n values over 64 n: the read would copy it all"
verdict = "error"
points = 0
message = "contiguous"
"""

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    spread = torch.zeros(a.numel() * 64, dtype=a.dtype)
    view = spread[::64]
    torch.add(a, b, out=view)
    return view
