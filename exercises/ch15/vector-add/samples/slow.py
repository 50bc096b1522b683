import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # Correct, but it adds in float64 and converts back: each conversion is a pass of its own,
    # and the float64 tensors are twice as wide, so about 5x the bytes of one float32 add.
    return (a.double() + b.double()).float()
