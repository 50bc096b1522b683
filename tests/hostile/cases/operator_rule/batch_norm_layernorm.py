"""
class = "operator_rule"
attack = "LayerNorm as batch_norm of the transposed rows (each row a channel), in training mode"
verdict = "correct"
points = 0
message = "batch_norm"
exercise = "layernorm"
compare = true

How it would gain: batch_norm in training mode normalises each channel over the batch by its
biased variance. With the rows as channels (x transposed) that is each row's mean and
variance, LayerNorm's, and no operator named layer_norm runs.

What the engine must do: layernorm's routes include batch_norm, which matches every variant
(native_batch_norm, _native_batch_norm_legit, cudnn_batch_norm): correctness points only.
"""

import torch
import torch.nn.functional as F


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    if x.shape[-1] == 1:  # one value per channel: batch_norm refuses it; LayerNorm gives 0
        return torch.zeros_like(x) * weight + bias
    normed = F.batch_norm(x.t(), None, None, training=True, eps=eps).t()
    return normed * weight + bias
