import torch


def layer_norm(x, weight, bias, eps=1e-5):
    # Correct, one pass over memory per line.
    mean = x.mean(dim=-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=-1, keepdim=True)
    normed = centered / torch.sqrt(var + eps)
    return normed * weight + bias
