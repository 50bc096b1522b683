# GELU and the residual add fused in one Triton kernel: each element is read once from x and
# once from residual, and written once (3 passes, not the 5 of two separate kernels). On a
# GPU it is compiled and timed; on a CPU worker it runs under Triton's interpreter
# (correctness only).
import torch
import triton
import triton.language as tl

INV_SQRT2 = 0.7071067811865476  # 1 / sqrt(2)

# Elements per program instance. Triton's interpreter (a CPU worker) pays a fixed cost per
# instance, so 4096 rather than the tutorial's 1024 keeps a CPU grading well inside its time
# limit; on a GPU both are usual sizes for a kernel this simple.
BLOCK_SIZE = 4096


@triton.jit
def gelu_residual_kernel(x_ptr, r_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    r = tl.load(r_ptr + offsets, mask=mask)
    # The exact GELU, as F.gelu computes it: 0.5 * x * (1 + erf(x / sqrt(2))).
    gelu = 0.5 * x * (1.0 + tl.math.erf(x * INV_SQRT2))
    tl.store(y_ptr + offsets, gelu + r, mask=mask)


def gelu_residual(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    x, residual = x.contiguous(), residual.contiguous()  # the kernel indexes them flat
    y = torch.empty_like(x)
    n = y.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    gelu_residual_kernel[grid](x, residual, y, n, BLOCK_SIZE=BLOCK_SIZE)
    return y
