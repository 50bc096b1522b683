import torch
import numpy_that_does_not_exist  # noqa: F401


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
