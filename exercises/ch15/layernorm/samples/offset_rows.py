import torch


def layer_norm(x, weight, bias, eps=1e-5):
    # One pass over the row for both statistics: var = E[x^2] - E[x]^2. Exact in real numbers,
    # but in float32 the two terms cancel: for rows of mean 60 and variance 1 the rounding of
    # E[x^2] ~ 3600 is a sizeable part of the variance left after the subtraction.
    mean = x.mean(dim=-1, keepdim=True)
    var = (x * x).mean(dim=-1, keepdim=True) - mean * mean
    return (x - mean) / torch.sqrt(var + eps) * weight + bias
