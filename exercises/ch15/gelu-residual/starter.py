import torch


def gelu_residual(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """Return gelu(x) + residual, with the exact (erf) GELU; do not modify the inputs."""
    raise NotImplementedError("write your fused GELU + residual here")
