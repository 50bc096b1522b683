import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # Adds in bfloat16, as careless mixed-precision code might, then converts back so the
    # dtype looks right: bfloat16 keeps 8 significant bits, far outside the tolerance.
    return (a.bfloat16() + b.bfloat16()).float()
