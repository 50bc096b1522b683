import torch
import torch.nn.functional as F

_fused_cuda = None


def _eager(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    # One GELU kernel (with a vectorised erf), then the residual added in place into
    # its fresh output: no third tensor is allocated.
    return F.gelu(x).add_(residual)


def gelu_residual(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    global _fused_cuda
    if x.is_cuda:
        # On a GPU, torch.compile fuses both into one Triton kernel: 3 passes, not 5.
        # Not on CPU: a cold compile costs ~20 s per sandbox, and on one CPU core the
        # erf, not the memory traffic, sets the pace (the eager version is as fast).
        if _fused_cuda is None:
            _fused_cuda = torch.compile(_eager, dynamic=True)
        return _fused_cuda(x, residual)
    return _eager(x, residual)
