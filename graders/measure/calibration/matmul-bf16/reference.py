import torch


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.mm(a, b)
