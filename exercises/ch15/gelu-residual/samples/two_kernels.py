import torch.nn.functional as F


def gelu_residual(x, residual):
    # As real code writes it (a transformer block's MLP output plus its skip connection): two
    # library kernels, the exact GELU into a temporary, then a fresh output for the sum. Both
    # read and write what the reference's in-place add does (5 passes), plus one more fresh
    # 16 MiB output per call; on one CPU core the erf sets the pace, not the traffic.
    return F.gelu(x) + residual
