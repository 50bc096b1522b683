"""
class = "runner_carry"
attack = "at import, lists /tmp, $HOME, /dev/shm and its folder for files an earlier sandbox left"
verdict = "correct"
points = "any"
stdout = "foreign=[]"
warm = true

With warm runners, a sandbox is started before its student is known, and another student's
grading ran on the same slot just before. Anything that grading's sandbox wrote where this
one can read would carry one student's work to the next. Every writable place a sandbox has
must be its own and start empty: this submission lists them at import (its own file, the
harness's job files and Python's caches aside) and prints what it found.
"""

import os

import torch

OWN = {"submission.py", "__pycache__", "job.json", "inbox", "out", "home", "in"}
found = []
for folder in {"/tmp", os.path.expanduser("~"), "/dev/shm", os.getcwd()}:
    try:
        names = os.listdir(folder)
    except OSError:
        continue
    found += [f"{folder}/{name}" for name in names if name not in OWN]
print(f"foreign={sorted(found)}", flush=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
