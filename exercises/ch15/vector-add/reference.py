import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # One fused pass: read a and b once, write the fresh output once.
    return torch.add(a, b)
