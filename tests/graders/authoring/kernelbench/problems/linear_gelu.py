# KernelBench style on purpose (super(Model, self) tests the rename to ModelNew).
# ruff: noqa: UP008
import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer followed by GELU: has weights, sized by get_init_inputs()."""

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))


batch_size = 128
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
