"""
class = "restarting_deadlines"
attack = "correct checks, then sleeps 10 s in every timed call (the timed phase has 6 s in all)"
verdict = "timeout"
points = 0
message = "timed phase gives your calls"

What it tries: the timed phase's budget (timed_s, 6 s in the corpus, 30 s on a real
worker) is one wall-clock budget for all of the submission's timed calls, warm-up included;
a call that runs past what is left of it must end the grading. A deadline armed afresh for
each call would let 1 warm-up and up to 8 timed calls of 5.9 s each hold the slot for
53 s. Here the first timed call alone outlasts the budget.

What the engine must do: end the grading when the timed budget runs out, 6 s into the
timed phase, as a timeout whose message says the timed phase gives the calls 6 s in all.
"""

import time

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.numel() >= 100_000:
        time.sleep(10.0)  # a timed call (4M elements; every check size is below 100 000)
    return a + b
