import math

import torch


def gelu_residual(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    # Correct, but every step is its own pass over memory.
    t = x / math.sqrt(2.0)
    t = torch.erf(t)
    t = t + 1.0
    t = t * x
    t = t * 0.5
    return t + residual
