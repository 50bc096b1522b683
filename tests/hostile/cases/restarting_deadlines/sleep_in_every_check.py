"""
class = "restarting_deadlines"
attack = "sleeps 18 s (just under the 20 s setup limit) in every check call, then is correct"
verdict = "timeout"
points = 0
message = "correctness checks"

How it would gain: each check call armed a deadline of its own, setup_s (20 s in the
corpus, 60 s on a real worker) from its start. A call that sleeps just under it never ran
out, and vector-add has 5 check sizes: the import and the checks together held the slot,
its core and its memory for 5 x 18 = 90 s (5 minutes on a real worker) while other
students waited, and the grading still ended correct. Nothing in a report showed it.

Check calls are told apart by their size (all below 100 000 elements; the timed size is
4M). The timed calls sleep 50 ms each, so the work is slow: no performance points either way.

What the engine must do: one budget, setup_s, for the import and every check call
together. It runs out during the second check call (18 s + 18 s > 20 s): a timeout, whose
message names the budget for the import and the correctness checks, about 20 s in.
"""

import time

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.numel() < 100_000:
        time.sleep(18.0)  # a check call: 2 s under the per-call limit
    else:
        time.sleep(0.05)
    return a + b
