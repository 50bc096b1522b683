import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax of each row of x over its last dimension, as a new tensor."""
    raise NotImplementedError("write your softmax here")
