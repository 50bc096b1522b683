import torch


def layer_norm(x, weight, bias, eps=1e-5):
    # Written out, as the exercise asks (F.layer_norm is forbidden): per block of rows (256 KiB,
    # still in cache), the mean and variance, then the normalised, scaled and shifted rows.
    out = torch.empty_like(x)
    rows = max(1, 65536 // max(1, x.shape[-1]))
    for start in range(0, x.shape[0], rows):
        block, result = x[start : start + rows], out[start : start + rows]
        var, mean = torch.var_mean(block, dim=-1, keepdim=True, correction=0)
        torch.sub(block, mean, out=result)
        result.mul_(torch.rsqrt(var.add_(eps)))
        result.mul_(weight).add_(bias)
    return out
