import os

import torch

# Try to escape the process limit; RLIMIT_NPROC must stop this quickly.
children = 0
try:
    for _ in range(100000):
        if os.fork() == 0:
            import time

            time.sleep(60)
            os._exit(0)
        children += 1
except OSError as exc:
    print(f"fork stopped after {children}: {exc}")


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
