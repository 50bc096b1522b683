import torch


def softmax(x):
    # Written out, as the exercise asks (torch.softmax is forbidden): per block of rows, max,
    # exp, sum and divide while the block (256 KiB) is still in cache, into one output.
    # On one CPU core eager PyTorch reaches about a quarter of the fused library kernel's speed.
    out = torch.empty_like(x)
    rows = max(1, 65536 // max(1, x.shape[-1]))
    for start in range(0, x.shape[0], rows):
        block, result = x[start : start + rows], out[start : start + rows]
        torch.sub(block, block.amax(dim=-1, keepdim=True), out=result)
        result.exp_()
        result.div_(result.sum(dim=-1, keepdim=True))
    return out
