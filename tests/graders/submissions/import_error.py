import numpy_that_does_not_exist  # noqa: F401
import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
