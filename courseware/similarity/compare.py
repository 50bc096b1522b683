"""Which final submissions of one exercise are too alike, by copydetect's winnowing over tokens.

copydetect (https://github.com/blingenf/copydetect) tokenizes Python with Pygments and replaces
every name with one letter, so renaming variables and functions changes nothing; comments and
blank lines are dropped. It fingerprints k-grams of those tokens and keeps one fingerprint per
window (winnowing, as MOSS does). Moving independent lines around only breaks the k-grams that
span a moved line's edges, so most fingerprints still match.

The starter code and the reference are fingerprinted first and their fingerprints removed from
every submission (copydetect's "boilerplate"): what everyone was given, or what the model answer
says, never makes two students alike.

A pair is flagged when each side shares at least FLAG_AT of its own fingerprinted tokens with the
other. Taking the smaller of the two shares, not the larger, keeps a short honest solution (three
lines that any answer contains) from being flagged against a long one.
"""

from __future__ import annotations

import io
import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from copydetect.detector import (  # type: ignore[import-untyped]  # no type hints of its own
    CodeFingerprint,
    compare_files,
)

# copydetect's defaults: a match shorter than NOISE tokens is ignored, one of GUARANTEE tokens or
# more is always found. The window is GUARANTEE - NOISE + 1.
NOISE = 25
GUARANTEE = 25
FLAG_AT = 0.5
# Pairs below this are not kept: in a short exercise almost every two answers share a run of
# tokens somewhere (a return after the docstring), and a class of 200 has 19,900 pairs.
LIST_AT = 0.2
PROGRESS_EVERY = 25  # pairs between progress reports

# copydetect logs a warning for every file it cannot tokenize; the report says so itself.
logging.getLogger("copydetect").setLevel(logging.ERROR)


@dataclass(frozen=True)
class Source:
    """One student's final submission: its id and its code."""

    key: int
    code: str


@dataclass(frozen=True)
class Match:
    """Two sources that share fingerprints: each side's share of its own tokens, and where."""

    first: int
    second: int
    first_share: float
    second_share: float
    tokens: int
    first_spans: list[tuple[int, int]]
    second_spans: list[tuple[int, int]]

    @property
    def similarity(self) -> float:
        return min(self.first_share, self.second_share)

    @property
    def flagged(self) -> bool:
        return self.similarity >= FLAG_AT


def fingerprint(code: str, boilerplate: np.ndarray | None = None) -> CodeFingerprint:
    return CodeFingerprint(
        "submission.py",
        NOISE,
        GUARANTEE - NOISE + 1,
        boilerplate=boilerplate if boilerplate is not None else [],
        fp=io.StringIO(code),
        language="python",
    )


def boilerplate_of(given: Sequence[str]) -> np.ndarray:
    """The fingerprints of everything the students were given (starter) or shown (reference)."""
    hashes: set[int] = set()
    for code in given:
        hashes |= fingerprint(code).hashes
    return np.array(sorted(hashes), dtype=np.int64)


def spans(slices: np.ndarray) -> list[tuple[int, int]]:
    """copydetect's 2×N array of (starts, ends) in the raw code, as sorted, merged pairs."""
    if slices.size == 0:
        return []
    pairs = sorted(zip(slices[0].tolist(), slices[1].tolist(), strict=True))
    merged: list[tuple[int, int]] = []
    for start, end in pairs:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((int(start), int(end)))
    return merged


def pair_count(n: int) -> int:
    return n * (n - 1) // 2


def matches(
    sources: Sequence[Source],
    given: Sequence[str],
    progress: Callable[[int], None] = lambda done: None,
) -> Iterator[Match]:
    """Every pair that shares any fingerprint outside the boilerplate; `progress(pairs_done)` is
    called every PROGRESS_EVERY pairs and once at the end."""
    boilerplate = boilerplate_of(given)
    prints = [fingerprint(source.code, boilerplate) for source in sources]
    done = 0
    for (i, a), (j, b) in itertools.combinations(enumerate(prints), 2):
        done += 1
        if done % PROGRESS_EVERY == 0:
            progress(done)
        if a.token_coverage == 0 or b.token_coverage == 0:
            continue  # nothing of its own beyond the boilerplate: nothing to match
        tokens, (share_a, share_b), (slices_a, slices_b) = compare_files(a, b)
        if tokens == 0:
            continue
        yield Match(
            first=sources[i].key,
            second=sources[j].key,
            first_share=min(1.0, float(share_a)),
            second_share=min(1.0, float(share_b)),
            tokens=int(tokens),
            first_spans=spans(slices_a),
            second_spans=spans(slices_b),
        )
    progress(done)


def marked(code: str, found: Sequence[tuple[int, int]]) -> list[tuple[str, bool]]:
    """The code cut into (text, matched) pieces, in order, for the side-by-side view."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for start, end in found:
        start, end = max(start, at), min(end, len(code))
        if start > at:
            pieces.append((code[at:start], False))
        if end > start:
            pieces.append((code[start:end], True))
        at = max(at, end)
    if at < len(code):
        pieces.append((code[at:], False))
    return pieces
