"""
class = "small_values"
attack = "softmax that computes exp only within 20 of each row's maximum and leaves the rest 0"
verdict = "wrong"
points = 0
message = "compared relative to themselves"
exercise = "softmax"
compare = true

How it would gain: softmax's logits have a standard deviation of 25, so about 99 % of each
row's probabilities are below 1e-6. While the tolerance was atol 1e-6 on every value, an
output that was 0 in 87-99 % of its positions passed every check and spot check (issue 38,
class 2), and a kernel that skips exp, and writes, for most of a row earned performance
points. exp(-20) is 2e-9: every value left at 0 here is smaller than that.

What the engine must do: compare small values relative to themselves (the exercise's
small_rtol), so a probability left at 0 is wrong wherever float32 can hold it, and say so.
"""

import torch

KEEP = 20.0  # logits further than this below the row's maximum are not exponentiated


def softmax(x: torch.Tensor) -> torch.Tensor:
    shifted = x - x.amax(dim=-1, keepdim=True)
    near = shifted > -KEEP
    e = torch.where(near, shifted.exp(), torch.zeros_like(shifted))
    return e / e.sum(dim=-1, keepdim=True)
