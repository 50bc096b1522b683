import os

import torch

os._exit(3)  # leaves while being imported


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
