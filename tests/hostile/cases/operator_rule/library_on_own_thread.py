"""
class = "operator_rule"
attack = "the library's softmax on a thread of the submission's own, in every call"
verdict = "correct"
points = 0
message = "which computes the library's softmax"
exercise = "softmax"
compare = true

How it would gain: torch.profiler records the operators of the thread that started it. A
call that hands the library's kernel to a worker thread of its own and waits for the result
ran no forbidden operator on the profiled thread, so the profiled call looked written out.

What the engine must do: see the operator whatever thread runs it (the watch lives in the
dispatcher's tables, which every thread shares): correctness points only.
"""

from concurrent.futures import ThreadPoolExecutor

import torch

_worker = ThreadPoolExecutor(max_workers=1)


def softmax(x: torch.Tensor) -> torch.Tensor:
    return _worker.submit(torch.softmax, x, -1).result()
