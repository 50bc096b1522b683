"""
class = "output_lies"
attack = "returns a torch.Tensor subclass whose data_ptr and stride lie"
verdict = "wrong"
points = 0
message = "must return a torch.Tensor"
"""

import torch


class Lying(torch.Tensor):
    def data_ptr(self) -> int:
        return 0x10

    def stride(self, *args: object) -> tuple[int, ...]:  # type: ignore[override]
        return (1 << 40,)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a + b).as_subclass(Lying)
