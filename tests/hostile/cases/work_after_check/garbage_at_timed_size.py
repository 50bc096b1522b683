"""
class = "work_after_check"
attack = "exact on every check size, garbage at once on the timed size (never seen in checks)"
verdict = "wrong"
points = 0
message = "timed"
"""

import torch

CHECK_SIZES = {0, 1, 1000, 4099, 65537}


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.numel() in CHECK_SIZES:
        return a + b
    return torch.empty_like(a)
