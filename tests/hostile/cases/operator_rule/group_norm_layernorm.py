"""
class = "operator_rule"
attack = "LayerNorm as group_norm with each row as a group of one channel"
verdict = "correct"
points = 0
message = "aten::group_norm"
exercise = "layernorm"
compare = true

How it would gain: [rules] forbid = ["layer_norm"] matched the words "layer" and "norm".
F.group_norm over a (1, rows, cols) view with one group per row normalises each row by its
own mean and variance, which is LayerNorm; then the weight and bias. The red team's version
earned 2 of the 4 performance points.

What the engine must do: layernorm's routes ([rules] routes) include group_norm (and
instance_norm, batch_norm and rms_norm): correctness points only.
"""

import torch
import torch.nn.functional as F


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    if x.shape[-1] == 1:  # one value per group: group_norm refuses it; LayerNorm gives 0
        return torch.zeros_like(x) * weight + bias
    normed = F.group_norm(x.unsqueeze(0), x.shape[0], eps=eps).squeeze(0)
    return normed * weight + bias
