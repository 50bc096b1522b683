"""
class = "restarting_deadlines"
attack = "sleeps 12 s at import and 12 s in the first check call: each under 20 s, not together"
verdict = "timeout"
points = 0
message = "correctness checks"

How it would gain: the import had setup_s (20 s in the corpus) and then each check call had
setup_s again from its own start, so 12 s at import and 12 s in a check call both stayed
within their limits: 24 s of the slot for a budget of 20 s, and a correct grading. Any split
of the time over the import and the checks worked the same way.

What the engine must do: count the import and the check calls against one budget of
setup_s: it runs out 8 s into the first check call, a timeout whose message names the
budget for the import and the correctness checks.
"""

import time

import torch

time.sleep(12.0)
slept = {"check": False}


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if not slept["check"]:
        slept["check"] = True
        time.sleep(12.0)  # the first check call
    time.sleep(0.05)
    return a + b
