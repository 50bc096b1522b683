"""Real vector-add solutions for the demo course (seed_similarity_demo) and the tests: one
written by a student, the same one handed in again by another with the names, comments and the
order of independent lines changed, and two honest solutions written differently."""

from __future__ import annotations

CHUNKED = '''import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a new tensor c with c[i] = a[i] + b[i]; do not modify a or b."""
    n = a.numel()
    out = torch.empty_like(a)
    chunk = 1 << 16
    # walk the input in cache-sized chunks
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        torch.add(a[start:stop], b[start:stop], out=out[start:stop])
    return out
'''

# CHUNKED with every name changed, another comment, and its three set-up lines reordered.
CHUNKED_DISGUISED = '''import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a new tensor c with c[i] = a[i] + b[i]; do not modify a or b."""
    block = 1 << 16
    result = torch.empty_like(a)
    total = a.numel()
    for lo in range(0, total, block):  # blockwise, so each piece stays in L2
        hi = min(lo + block, total)
        torch.add(a[lo:hi], b[lo:hi], out=result[lo:hi])
    return result
'''

CLONE_THEN_ADD = '''import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a new tensor c with c[i] = a[i] + b[i]; do not modify a or b."""
    c = a.clone()
    c += b
    return c
'''

FLAT_COPY_THEN_ADD = '''import torch


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a new tensor c with c[i] = a[i] + b[i]; do not modify a or b."""
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    out = torch.zeros(flat_a.shape, dtype=a.dtype)
    out.copy_(flat_a)
    out.add_(flat_b)
    return out.view_as(a)
'''

# (username, code): the demo students of seed_similarity_demo.
DEMO_STUDENTS = (
    ("dana", CHUNKED),
    ("eli", CHUNKED_DISGUISED),
    ("fay", CLONE_THEN_ADD),
    ("gus", FLAT_COPY_THEN_ADD),
)
