import math

import torch


def attention(q, k, v):
    # Written out, as the exercise asks (scaled_dot_product_attention is forbidden): per head
    # and block of queries, the scores, their softmax and the weighted values, so a block's
    # scores (at most 256 KiB) stay in cache.
    out = torch.empty_like(q)
    seq = k.shape[-2]
    rows = max(1, 65536 // max(1, seq))
    scale = 1.0 / math.sqrt(q.shape[-1])
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            keys_t, values = k[b, h].transpose(0, 1), v[b, h]
            for start in range(0, q.shape[2], rows):
                scores = torch.mm(q[b, h, start : start + rows], keys_t).mul_(scale)
                torch.mm(torch.softmax(scores, dim=-1), values, out=out[b, h, start : start + rows])
    return out
