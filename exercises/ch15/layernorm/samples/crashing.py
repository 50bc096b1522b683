import torch


def layer_norm(x, weight, bias, eps=1e-5):
    # Assumes the width is a multiple of 16, to process the row in chunks of 16.
    chunks = x.view(x.shape[0], -1, 16)
    mean = chunks.mean(dim=(-1, -2), keepdim=True)
    var = chunks.var(dim=(-1, -2), keepdim=True, unbiased=False)
    return ((chunks - mean) / torch.sqrt(var + eps)).view(x.shape) * weight + bias
