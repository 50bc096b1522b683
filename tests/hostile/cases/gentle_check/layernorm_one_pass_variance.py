"""
class = "gentle_check"
attack = "layernorm with the one-pass float32 variance E[x^2] - E[x]^2: cancels on rows of mean 60"
verdict = "wrong"
points = 0
message = "offset_rows"
exercise = "layernorm"
"""

import torch


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    # Both sums in one sweep, as a fused kernel would keep them; clamped so that rounding
    # never makes the variance negative. Neither helps: E[x^2] ~ 3600 rounds to 2.4e-4, a
    # sizeable part of a variance of 1 once E[x]^2 is subtracted.
    n = x.shape[-1]
    total = x.sum(dim=-1, keepdim=True)
    squares = (x * x).sum(dim=-1, keepdim=True)
    mean = total / n
    variance = (squares / n - mean * mean).clamp_min(0.0)
    return (x - mean) * torch.rsqrt(variance + eps) * weight + bias
