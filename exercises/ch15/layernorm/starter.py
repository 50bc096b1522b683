import torch


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """Normalise each row of x over its last dimension, then scale by weight and add bias."""
    raise NotImplementedError("write your LayerNorm here")
