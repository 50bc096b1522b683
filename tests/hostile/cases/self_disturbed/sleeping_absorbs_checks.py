"""
class = "self_disturbed"
attack = "sleeps in early correct calls (set aside, yet verified), then garbage that is timed"
verdict = "wrong"
points = 0
exercise = "layernorm"
compare = true

How it would gain (against the corpus's quick layernorm: 1 warm-up call, 5 to 8 timed calls
kept, the last one kept always verified, and one more verified call picked at random, each
call with a chance of 1 in 5): a call in which the sandbox slept counted as preempted and
was set aside, up to 8 of them, yet it could still be the call picked at random for
verification. So the first 5 timed calls (the warm-up, then 4 set aside) are correct, slow
and asleep for most of the call: with a chance of 1 - 0.8^4 = 59 % the one random
verification is spent on them, and none of them counts towards the median. The next 6
calls return garbage (a copy of x) in about the time the reference takes, their times
spread so the median's error stays too wide for the phase to stop on one of them; the
calls after that are correct again (slow, and kept), and the 8th kept call, the one the
phase stops on and verifies, is one of them. The median is that of the garbage calls: 4
performance points for a kernel that earns 0, in about 70 % of gradings (59 %, plus 41 %
times 0.8^6 that no garbage call is picked); the rest are caught as wrong.

Timed calls are told apart from checks by their shape: a check size comes once (or twice),
the timed size every call, so the n-th call of one shape is timed call n (or a check).

What the engine must do: keep a call the submission slept in, at its own (slow) time, so
the sleeps buy nothing, and check every timed call it keeps: the 4 correct calls are kept,
the first garbage call is the 5th kept call, and it is caught. The grading is wrong, with
0 points, whichever of the two closes the hole first (and on a busy machine, where a
sleeping call may still be set aside for a real stall, the garbage is caught all the same).
"""

import time

import torch

SLEEPING = 5  # calls 1..5 of a shape: correct, slow, asleep for most of the call
GARBAGE = 6  # calls 6..11: garbage, timed; calls 12 on: correct and slow again
calls: dict[tuple[int, ...], int] = {}


def slow_layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float
) -> torch.Tensor:
    """Correct and slow: float64, two passes per row, one row at a time."""
    out = torch.empty_like(x)
    w, b = weight.double(), bias.double()
    for i, row in enumerate(x.double()):
        centred = row - row.mean()
        out[i] = centred / torch.sqrt((centred * centred).mean() + eps) * w + b
    return out


def spin(seconds: float) -> None:
    """Busy, not asleep: a garbage call must not look preempted (it must be kept)."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    n = calls[tuple(x.shape)] = calls.get(tuple(x.shape), 0) + 1
    if n <= SLEEPING:
        out = slow_layer_norm(x, weight, bias, eps)
        time.sleep(0.005)  # idle for more than 2% of the call: set aside as preempted
        return out
    if n <= SLEEPING + GARBAGE:
        # Garbage, in a plausible time: a copy, then 50 to 150 us more, in a cycle, so the
        # times spread by far more than the phase's stopping rule tolerates.
        garbage = x.clone()
        spin(50e-6 * (1 + (n % 3)))
        return garbage
    return slow_layer_norm(x, weight, bias, eps)
