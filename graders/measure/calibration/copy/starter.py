import torch


def copy(a: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(a)
    out.copy_(a)
    return out
