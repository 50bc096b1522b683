# CUDA C++ through torch.utils.cpp_extension.load_inline: a __global__ kernel and a host
# wrapper, compiled by nvcc when the file is imported. Only a GPU worker can run it; a CPU
# worker rejects it before anything runs, with a message that says so.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {  // the last block runs past the end when n is not a multiple
        c[i] = a[i] + b[i];
    }
}

torch::Tensor vector_add_cuda(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(a.is_contiguous() && b.is_contiguous(), "inputs must be contiguous");
    auto c = torch::empty_like(a);
    int64_t n = a.numel();
    if (n == 0) {
        return c;
    }
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    // On PyTorch's current stream, so the kernel is ordered with everything else.
    add_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return c;
}
"""

CPP_SOURCE = "torch::Tensor vector_add_cuda(torch::Tensor a, torch::Tensor b);"

_module = load_inline(
    name="vector_add_inline",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["vector_add_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _module.vector_add_cuda(a, b)
