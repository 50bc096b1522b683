import torch
import torch.nn.functional as F


def gelu_residual(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    # Assumes the width is a multiple of 16 (true for "nice" sizes only).
    blocks = x.view(x.shape[0], -1, 16)
    return (F.gelu(blocks) + residual.view(blocks.shape)).view(x.shape)
