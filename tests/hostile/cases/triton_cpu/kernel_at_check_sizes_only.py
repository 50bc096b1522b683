"""
class = "triton_cpu"
attack = "a launched Triton kernel at the check sizes, zeros at the timed size"
verdict = "wrong"
points = 0
message = "timed size"

How it would gain: a Triton file on a CPU worker ended its grading after the check sizes
(its interpreted timing earns nothing), so no call at the exercise's own size was ever
checked: a kernel right at the public check sizes and zeros above them got 6/10.

What the engine must do: once a Triton kernel is launched, make one more call, untimed, at
the timed size and verify it in full: the zeros are wrong there, and the message says where.
"""

import torch
import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(c_ptr + offsets, a + b, mask=mask)


LARGEST_CHECK = 65537  # the exercise's public check sizes go up to this


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.numel() > LARGEST_CHECK:
        return torch.zeros_like(a)
    c = torch.empty_like(a)
    n = c.numel()
    add_kernel[(triton.cdiv(n, 4096),)](a, b, c, n, BLOCK=4096)
    return c
