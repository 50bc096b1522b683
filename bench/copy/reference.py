import torch


def copy(x: torch.Tensor) -> torch.Tensor:
    return x.clone()
