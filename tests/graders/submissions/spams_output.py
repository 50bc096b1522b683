import sys

import torch

for _ in range(20000):
    print("x" * 100)
    sys.stderr.write("y" * 100 + "\n")


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
