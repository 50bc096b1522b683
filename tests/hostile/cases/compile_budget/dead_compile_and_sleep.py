"""
class = "compile_budget"
attack = "a dead `if False: torch.compile(...)` and a 95 s sleep at import"
verdict = "timeout"
points = 0
message = "it ran 0.0 s"

How it would gain: the budget of the import and the checks was compile_s (120 s) instead of
setup_s for any file whose syntax tree named torch.compile, so a line that never runs
doubled it: the same file without the line timed out, with it the grading waited 105 s and
gave 10/10 (issue 38, class 5).

What the engine must do: add to setup_s (20 s in the corpus) only the time a compiler was seen
running in the sandbox, none here: the import runs out of its budget, a timeout whose message
says that no compiler ran.
"""

import time

import torch

if False:
    torch.compile(lambda x: x)  # never runs: a word, not a compile

time.sleep(95.0)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
