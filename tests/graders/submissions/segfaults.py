import ctypes

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return a + b
