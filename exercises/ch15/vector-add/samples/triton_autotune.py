# A Triton kernel under @triton.autotune: on a GPU the autotuner times each block size and
# keeps the fastest. On a CPU worker Triton's interpreter has no device to time them on, so it
# runs the first configuration (correctness points only, like triton_kernel.py).
import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        # Largest first: the interpreter pays a fixed cost per program instance.
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=8),
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=8),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
    ],
    key=["n"],
)
@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(c_ptr + offsets, a + b, mask=mask)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    c = torch.empty_like(a)
    n = c.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](a, b, c, n)
    return c
