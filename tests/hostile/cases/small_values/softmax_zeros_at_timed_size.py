"""
class = "small_values"
attack = "softmax exact on every check shape, small probabilities left at 0 in the timed calls"
verdict = "wrong"
points = 0
message = "compared relative to themselves"
exercise = "softmax"
compare = true

How it would gain: the check shapes are public. A submission that is exact there and drops
the small probabilities only at the timed shape must be caught by what judges the timed calls:
the spot check of every call and the calls verified in full. They must apply the same rule as
the checks: a value far below atol is still compared relative to itself.
"""

import torch

KEEP = 20.0
# The check shapes of exercises/ch15/softmax (sizes and check cases); the timed one is not.
CHECK_SHAPES = {(1, 1), (1, 65537), (3, 1000), (257, 129)}


def softmax(x: torch.Tensor) -> torch.Tensor:
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = shifted.exp()
    if tuple(x.shape) not in CHECK_SHAPES:
        e = torch.where(shifted > -KEEP, e, torch.zeros_like(e))
    return e / e.sum(dim=-1, keepdim=True)
