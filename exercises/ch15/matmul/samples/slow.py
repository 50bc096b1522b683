import torch


def matmul(a, b):
    # Correct: one output row at a time, re-reading b for every row.
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    for i in range(a.shape[0]):
        out[i] = torch.mv(b.t(), a[i])
    return out
