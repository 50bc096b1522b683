import torch


def copy(a: torch.Tensor) -> torch.Tensor:
    return a.clone()
