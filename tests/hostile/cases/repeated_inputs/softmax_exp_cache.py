"""
class = "repeated_inputs"
attack = "remembers float64 exp(x) of every value seen; a timed x found there is only normalised"
verdict = "correct"
points = 0
exercise = "softmax-pool"
compare = true

How it would gain: as in gelu_window_cache.py, the timed inputs of a memory-bound exercise
(16 MiB or more) were windows of one pool per grading, so every timed x shares 7/8 of its
values, in order, with the one before. Softmax looks harder to cache (its rows start at a
new place in every window, so no row repeats), but softmax(x) = exp(x) / sum(exp(x)) per
row, and exp(x) is per element: with the logits' std of 25, exp(x) fits a float64 without
subtracting the row maximum. So this submission remembers exp(x) in float64 for every value
of the pool it has seen; a found window costs one row sum and one division (faster than the
reference, so 4 points), and only the values it has never seen pay for the slow exp (a
float64 power, 256 elements at a time: 0 points honestly).

What the engine must do: give every timed call values of its own, so no window is ever
found, every call computes every exp slowly, and the grading is correct with 0 points.
"""

import math

import torch

TIMED = 1 << 20  # the timed size has 4M elements; the check sizes are all below 70k
STRIDE = 16  # one remembered value in 16 is indexed; x's first 16 values hold one of them
SAMPLES = 64  # values compared before a window counts as found (with the first 16)
CHUNK = 256  # the slow exp's piece: one power per piece, in a Python loop


def slow_exp(x: torch.Tensor) -> torch.Tensor:
    """The honest, slow part: exp(x) in float64, a small piece at a time (no max taken:
    |x| stays far below 709, where a float64 exp overflows)."""
    d = x.double()
    return torch.cat([torch.pow(math.e, piece) for piece in d.split(CHUNK)])


def normalise(e: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    rows = e.view(shape)
    return (rows / rows.sum(dim=-1, keepdim=True)).float()


class Seen:
    """One contiguous stretch of the timed pool, as far as it has been seen, with its exp.

    Positions are virtual (the pool's own offsets are secret): ``lo`` is the virtual
    position of ``xs[0]``; ``where`` maps a value to its virtual position, for every
    position that is a multiple of STRIDE (a dict over every value would cost more to
    build than it saves).
    """

    def __init__(self) -> None:
        self.xs = torch.empty(0)
        self.es = torch.empty(0)
        self.lo = 0
        self.where: dict[float, int] = {}

    def _index(self, values: torch.Tensor, first: int) -> None:
        start = -first % STRIDE
        picked = values[start::STRIDE].tolist()
        self.where.update(
            zip(picked, range(first + start, first + len(values), STRIDE), strict=True)
        )

    def reset(self, x: torch.Tensor, g: torch.Tensor) -> None:
        self.xs, self.es, self.lo, self.where = x.clone(), g, 0, {}
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
                self.es = torch.cat([slow_exp(x[:q]), self.es])
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
            self.es = torch.cat([self.es, slow_exp(tail)])
            self._index(tail, first)


seen = Seen()


def softmax(x: torch.Tensor) -> torch.Tensor:
    if x.numel() < TIMED:
        # A check: nothing to remember (a row of 1e4-scale logits needs the max taken).
        d = x.double()
        return normalise(torch.exp(d - d.max(dim=-1, keepdim=True).values), x.shape)
    flat = x.reshape(-1)
    at = seen.find(flat)
    if at is None and len(seen.xs) and seen.extend_front(flat):
        at = seen.find(flat)
    if at is None:
        # Never seen (the first timed call, or values that are fresh every call): the
        # honest slow path, remembered for the calls to come.
        e = slow_exp(flat)
        seen.reset(flat, e)
        return normalise(e, x.shape)
    seen.extend_back(flat, at)
    return normalise(seen.es[at : at + flat.numel()], x.shape)
