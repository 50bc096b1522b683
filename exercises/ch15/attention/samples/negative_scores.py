import math

import torch


def attention(q, k, v):
    # The FlashAttention loop over blocks of keys, but with the running maximum starting at
    # 0 instead of -inf: exact while some score of a row is positive; for a row whose scores
    # are all far below 0, every exp(score - 0) underflows to 0, and 0 / 0 is NaN.
    m = q.new_zeros(*q.shape[:-1], 1)
    total = torch.zeros_like(m)
    out = torch.zeros_like(q)
    for start in range(0, k.shape[-2], 32):
        scores = q @ k[..., start : start + 32, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
        p = torch.exp(scores - m_new)
        rescale = torch.exp(m - m_new)
        total = total * rescale + p.sum(dim=-1, keepdim=True)
        out = out * rescale + p @ v[..., start : start + 32, :]
        m = m_new
    return out / total
