"""
class = "gentle_check"
attack = "layernorm that ignores eps: exact on random rows, divides by ~0 on near-constant rows"
verdict = "wrong"
points = 0
message = "near_constant_rows"
exercise = "layernorm"
"""

import torch


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    centered = x - mean
    variance = (centered * centered).mean(dim=-1, keepdim=True)
    return centered * torch.rsqrt(variance.clamp_min(1e-30)) * weight + bias
