"""
class = "triton_cpu"
attack = "an unused @triton.jit kernel, torch at the check sizes and zeros at the timed size"
verdict = "wrong"
points = 0

How it would gain: a @triton.jit decorator anywhere made the file "Triton", and on a CPU
worker a Triton file was graded on the check sizes alone (its interpreted timing earns
nothing, so it was not timed): right at the public check sizes and zeros above them, it got
6/10 and "its results are checked as they would be on a GPU". Without the decorator the same
file is wrong (issue 38, class 3).

What the engine must do: make a file Triton only when a Triton kernel is launched. None is
here, so it is graded like any Python file: the timed phase's spot checks find the zeros.
"""

import torch
import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]


@triton.jit
def never_launched(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.zeros((BLOCK,), tl.float32), mask=offsets < n)


LARGEST_CHECK = 65537  # the exercise's public check sizes go up to this


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.numel() > LARGEST_CHECK:
        return torch.zeros_like(a)
    return a + b
