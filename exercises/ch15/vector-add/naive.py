import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # What many newcomers write: start from zeros and accumulate. Correct, but it makes
    # 7 passes over a whole tensor (write the zeros; read c and a, write c; read c and b,
    # write c) where one addition makes 3 (read a, read b, write c).
    c = torch.zeros_like(a)
    c += a
    c += b
    return c
