"""
class = "repeated_inputs"
attack = "remembers gelu(x) per value it has seen; a timed x found among them costs one add"
verdict = "correct"
points = 0
exercise = "gelu-residual"
compare = true

How it would gain: a memory-bound exercise's timed inputs (16 MiB or more) were windows, at
secret offsets, of one pool drawn per grading, a pool only an eighth longer than each input.
So every x of the timed phase shares at least 7/8 of its values, in the same order, with
the x before it. This submission computes GELU slowly (float64 erf, ~7x the reference's
time: 0 performance points when measured honestly) but remembers every x it has seen as one
contiguous stretch of that pool, with its GELU. A new x is looked up by its first values;
when the stretch holds all of it, the call is `remembered_gelu[window] + residual`, one add
(faster than the reference's erf, so 4 points); when x sticks out at either end, only the
part that sticks out is computed slowly. A few calls into the timed phase, nearly every
call is a hit. The residual is never cached (its window is paired with x at a new offset
each call), and every answer is exact: remembered values are used only where x was found
(its first 16 values and 64 spread over it agree exactly: windows of one pool agree
everywhere, other values disagree at once).

What the engine must do: give every timed call values of its own (no x met twice), so the
lookup never hits, every call pays for its own GELU and the grading is correct with 0
points.
"""

import math

import torch

TIMED = 1 << 20  # the timed size has 2M elements; the check sizes are all below 70k
STRIDE = 16  # one remembered value in 16 is indexed; x's first 16 values hold one of them
SAMPLES = 64  # values compared before a window counts as found (with the first 16)


def slow_gelu(x: torch.Tensor) -> torch.Tensor:
    """The honest, slow part: GELU in float64, one pass per step of the formula."""
    d = x.double()
    return (0.5 * d * (1.0 + torch.erf(d / math.sqrt(2.0)))).float()


class Seen:
    """One contiguous stretch of the timed pool, as far as it has been seen, with its GELU.

    Positions are virtual (the pool's own offsets are secret): ``lo`` is the virtual
    position of ``xs[0]``; ``where`` maps a value to its virtual position, for every
    position that is a multiple of STRIDE (a dict over all 2M values would cost more to
    build than it saves).
    """

    def __init__(self) -> None:
        self.xs = torch.empty(0)
        self.gs = torch.empty(0)
        self.lo = 0
        self.where: dict[float, int] = {}

    def _index(self, values: torch.Tensor, first: int) -> None:
        start = -first % STRIDE
        picked = values[start::STRIDE].tolist()
        self.where.update(
            zip(picked, range(first + start, first + len(values), STRIDE), strict=True)
        )

    def reset(self, x: torch.Tensor, g: torch.Tensor) -> None:
        self.xs, self.gs, self.lo, self.where = x.clone(), g, 0, {}
        self._index(self.xs, 0)

    def _matches(self, x: torch.Tensor, at: int) -> bool:
        """Whether x[0:n] equals xs[at:at+n] where they overlap (spot checks: a wrong guess
        disagrees at once, and windows of one pool agree exactly)."""
        n = min(len(x), len(self.xs) - at)
        if at < 0 or n <= 0:
            return False
        spots = torch.linspace(0, n - 1, SAMPLES).long()
        head = min(n, STRIDE)
        return torch.equal(x[:head], self.xs[at : at + head]) and torch.equal(
            x[spots], self.xs[at + spots]
        )

    def find(self, x: torch.Tensor) -> int | None:
        """Where x[0] lies in xs, if x starts inside the stretch."""
        for j, value in enumerate(x[:STRIDE].tolist()):
            virtual = self.where.get(value)
            if virtual is not None and self._matches(x, virtual - j - self.lo):
                return virtual - j - self.lo
        return None

    def extend_front(self, x: torch.Tensor) -> bool:
        """x starts before the stretch: find where the stretch starts in x, compute the
        values in front of it (slowly) and remember them."""
        hits = torch.nonzero(x == self.xs[0]).flatten().tolist()
        for q in hits:
            if q > 0 and self._matches(x[q:], 0):
                self.xs = torch.cat([x[:q], self.xs])
                self.gs = torch.cat([slow_gelu(x[:q]), self.gs])
                self.lo -= q
                self._index(x[:q], self.lo)
                return True
        return False

    def extend_back(self, x: torch.Tensor, at: int) -> None:
        """x starts at ``at`` but runs past the stretch: compute the tail (slowly)."""
        have = len(self.xs) - at
        if have < len(x):
            tail = x[have:]
            first = self.lo + len(self.xs)
            self.xs = torch.cat([self.xs, tail])
            self.gs = torch.cat([self.gs, slow_gelu(tail)])
            self._index(tail, first)


seen = Seen()


def gelu_residual(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    if x.numel() < TIMED:
        return slow_gelu(x) + residual  # a check: nothing to remember
    flat = x.reshape(-1)
    at = seen.find(flat)
    if at is None and len(seen.xs) and seen.extend_front(flat):
        at = seen.find(flat)
    if at is None:
        # Never seen (the first timed call, or values that are fresh every call): the
        # honest slow path, remembered for the calls to come.
        g = slow_gelu(flat)
        seen.reset(flat, g)
        return g.view_as(x) + residual
    seen.extend_back(flat, at)
    return seen.gs[at : at + flat.numel()].view_as(x) + residual
