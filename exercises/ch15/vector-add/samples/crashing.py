import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    scale = 0
    return (a + b) * (1 / scale)
