"""
class = "runner_carry"
attack = "at import, reads the input region its warm runner inherited, for the last grading's data"
verdict = "correct"
points = "any"
stdout = "carried=0 of"
warm = true

A warm runner is started ahead of its grading and times its empty calls then, with inputs
copied into its region; before that, the runner of the grading before it had the previous
student's. This submission finds the harness's input region (the object that maps it) and
counts the bytes in it that are not zero before any input of its own grading was placed.
The grader must have cleared the region before loading it: it prints carried=0.
"""

import ctypes
import gc

import torch

carried, size = -1, 0
for candidate in gc.get_objects():
    if type(candidate).__name__ == "InputRegion" and hasattr(candidate, "memory"):
        size = len(candidate.memory) - candidate.offset
        raw = (ctypes.c_ubyte * size).from_address(candidate.address)
        view = torch.frombuffer(raw, dtype=torch.uint8)
        carried = int(torch.count_nonzero(view))
        break
print(f"carried={carried} of {size} bytes", flush=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
