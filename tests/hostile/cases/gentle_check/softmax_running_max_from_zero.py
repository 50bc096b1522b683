"""
class = "gentle_check"
attack = "softmax shifted by the row maximum clamped at 0 (running max from 0): 0/0 on rows < 0"
verdict = "wrong"
points = 0
message = "negative_logits"
exercise = "softmax"
"""

import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    shift = x.amax(dim=-1, keepdim=True).clamp(min=0.0)
    e = torch.exp(x - shift)
    return e / e.sum(dim=-1, keepdim=True)
