"""
class = "gentle_check"
attack = "softmax whose shift is the row maximum clamped to 150: exact on std-25 logits, not beyond"
verdict = "wrong"
points = 0
message = "large_logits"
exercise = "softmax"
"""

import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    shift = x.amax(dim=-1, keepdim=True).clamp(max=150.0)
    e = torch.exp(x - shift)
    return e / e.sum(dim=-1, keepdim=True)
