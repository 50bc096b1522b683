"""
class = "operator_rule"
attack = "the library's softmax only above every public check size, that is in the timed calls"
verdict = "correct"
points = 0
message = "which computes the library's softmax"
exercise = "softmax"
compare = true

How it would gain: the check sizes are in exercise.toml, public, and none is the timed size.
[rules] forbid was checked in one untimed call under the profiler at the largest check size,
so code that writes softmax out up to that size and calls the library's kernel above it was
never seen running it, and its timed calls were the library's own: 10/10 at 1.02x the
reference.

What the engine must do: count the forbidden operator in the timed calls themselves (the
harness's operator watch counts every call, at every size): correctness points only.
"""

import torch

LARGEST_CHECK = 65537  # [sizes.cpu] check: 1 x 65,537 elements at most


def softmax(x: torch.Tensor) -> torch.Tensor:
    if x.numel() > LARGEST_CHECK:
        return torch.softmax(x, dim=-1)
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
