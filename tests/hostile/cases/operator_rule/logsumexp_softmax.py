"""
class = "operator_rule"
attack = "softmax as exp(x - logsumexp(x)): the library's normaliser under another name"
verdict = "correct"
points = 0
message = "aten::logsumexp"
exercise = "softmax"
compare = true

How it would gain: [rules] forbid matched the words of "softmax" in the operators' names, and
torch.logsumexp computes the same row reduction (the log of softmax's denominator, with the
maximum subtracted) without the word in its name. The rest is one subtraction and one exp,
in float64: in float32, x - logsumexp(x) loses digits on the check case's large logits, and
the case must be right to show that only the rule takes its points.

What the engine must do: match by what an operator computes: softmax's routes
([rules] routes in exercise.toml) include logsumexp. Correctness points only.
"""

import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    wide = x.double()
    return torch.exp(wide - torch.logsumexp(wide, dim=-1, keepdim=True)).float()
