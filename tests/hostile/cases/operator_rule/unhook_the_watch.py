"""
class = "operator_rule"
attack = "destroys the grader's operator watch at import, then calls the library's softmax"
verdict = "correct"
points = 0
message = "could not read which operators your code ran"
exercise = "softmax"
compare = true

How it would gain: the watch is kernels registered in PyTorch's dispatcher through
torch.library.Library objects of the harness, in the submission's own process. Destroying
them (found with gc) puts the library's kernels back unwatched: no call is counted, so no
forbidden operator is found, and the library's speed earns full points.

What the engine must do: notice that the kernels the dispatcher runs are no longer the
watch's (the harness compares them with what it registered), and then not believe the
counts: correctness points only, with a message that says why.
"""

import gc

import torch

for thing in gc.get_objects():
    if isinstance(thing, torch.library.Library) and thing.ns == "aten":
        thing._destroy()


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)
