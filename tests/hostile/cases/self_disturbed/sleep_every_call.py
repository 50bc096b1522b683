"""
class = "self_disturbed"
attack = "sleeps 20 ms in every call on top of slow, correct work: each call looks preempted"
verdict = "correct"
points = 0
exercise = "layernorm"
compare = true

How it would gain: a timed call in which the sandbox sat idle for more than 2% of the
window was taken for one preempted by the machine, set aside and measured again, until the
phase ran out of retries. A submission decides when it sits idle: a sleep is idle time.
Here every call sleeps, so every call was set aside (8 of them, the most the phase
allows) before any was kept: the grading spends its retries, and its report, on a
disturbance the machine never had. This case gains no points by itself (the work is slow
either way, a float64 LayerNorm row by row); sleeping_absorbs_checks.py turns the same
retries into points.

What the engine must do: count a sleep of the submission's own as its own time. Every call
is kept at what it took, and the grading is correct with 0 points. How many calls a real
stall of the machine still sets aside depends on the machine's load, so it is not asserted
here: tests/graders/test_containment.py checks that a sleep is never counted as a stall.
"""

import time

import torch


def slow_layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float
) -> torch.Tensor:
    """Correct and slow: float64, two passes per row, one row at a time."""
    out = torch.empty_like(x)
    w, b = weight.double(), bias.double()
    for i, row in enumerate(x.double()):
        centred = row - row.mean()
        out[i] = centred / torch.sqrt((centred * centred).mean() + eps) * w + b
    return out


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    out = slow_layer_norm(x, weight, bias, eps)
    time.sleep(0.02)  # idle for most of the call: it reads as preempted
    return out
