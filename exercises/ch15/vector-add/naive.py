import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # What many newcomers write: start from zeros and accumulate. Correct, but it
    # makes three passes over memory (zero fill, += a, += b) instead of one.
    c = torch.zeros_like(a)
    c += a
    c += b
    return c
