"""
class = "gentle_check"
attack = "softmax without subtracting the row maximum: exp() overflows on large logits"
verdict = "wrong"
points = 0
message = "Wrong result"
exercise = "softmax"
"""

import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)
