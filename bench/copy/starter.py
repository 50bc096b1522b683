import torch


def copy(x: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError
