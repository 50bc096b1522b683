import torch


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    torch.backends.cuda.matmul.allow_tf32 = True  # no effect on a CPU
    return torch.mm(a, b)
