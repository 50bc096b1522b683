import torch


def softmax(x):
    # Wrong axis: the inputs are 2-D, there is no dimension 2.
    return torch.softmax(x, dim=2)
