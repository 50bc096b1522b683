"""
class = "small_values"
attack = "attention whose probabilities are 0 beyond 6 below each row's best score (60 % of them)"
verdict = "wrong"
points = 0
message = "Wrong result"
exercise = "attention"

How it would gain: as softmax_exp_near_max.py, inside attention: the softmax of the scores is
computed only near each row's maximum, and the keys whose weights are left at 0 need not be
multiplied with their values. attention's output is a weighted mean of the values, so the
weights dropped show in it: with scores of standard deviation 2, dropping every weight below
e^-6 of the largest moves most outputs beyond the tolerance (only dropping less than 1 % of the
weights, below e^-14, would pass, and that saves nothing).

What the engine must do: grade it wrong, at the check sizes and in the timed calls alike.
"""

import math

import torch

KEEP = 6.0


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    weights = torch.where(shifted > -KEEP, shifted.exp(), torch.zeros_like(shifted))
    return (weights @ v) / weights.sum(dim=-1, keepdim=True)
