import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a + b).reshape(-1, 1)
