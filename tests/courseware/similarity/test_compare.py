"""copydetect on real vector-add code: a disguised copy is found, honest solutions and the
starter code are not flagged."""

from __future__ import annotations

from pathlib import Path

from courseware.similarity import compare
from courseware.similarity.demo_solutions import (
    CHUNKED,
    CHUNKED_DISGUISED,
    CLONE_THEN_ADD,
    FLAT_COPY_THEN_ADD,
)

FOLDER = Path(__file__).resolve().parents[3] / "exercises" / "ch15" / "vector-add"
GIVEN = [(FOLDER / name).read_text() for name in ("starter.py", "reference.py", "naive.py")]


def compared(*codes: str) -> list[compare.Match]:
    sources = [compare.Source(key=i, code=code) for i, code in enumerate(codes)]
    return list(compare.matches(sources, GIVEN))


def test_a_copy_with_other_names_comments_and_line_order_is_flagged() -> None:
    (found,) = compared(CHUNKED, CHUNKED_DISGUISED)
    assert found.flagged, found
    assert found.similarity >= 0.75
    # The loop is highlighted on both sides.
    assert any("torch.add(a[start:stop]" in CHUNKED[s:e] for s, e in found.first_spans)
    assert any("torch.add(a[lo:hi]" in CHUNKED_DISGUISED[s:e] for s, e in found.second_spans)


def test_two_honest_solutions_written_differently_are_not_flagged() -> None:
    for found in compared(CLONE_THEN_ADD, FLAT_COPY_THEN_ADD, CHUNKED):
        assert not found.flagged, found


def test_the_starter_code_alone_never_makes_a_pair() -> None:
    starter, reference = GIVEN[0], GIVEN[1]
    assert compared(starter, starter, reference, reference) == []
    # Handed in untouched but for comments and names of their own, it is still only the starter.
    touched = starter.replace('"""Return', '# my notes\n    x = 1\n    """Return')
    assert compared(touched, starter, touched.replace("x = 1", "y = 2")) == []


def test_progress_counts_every_pair() -> None:
    seen: list[int] = []
    sources = [compare.Source(key=i, code=c) for i, c in enumerate([CHUNKED] * 30)]
    found = list(compare.matches(sources, GIVEN, seen.append))
    assert seen[-1] == compare.pair_count(30) == 435
    assert seen[:2] == [compare.PROGRESS_EVERY, 2 * compare.PROGRESS_EVERY]
    assert len(found) == 435 and all(m.flagged for m in found)


def test_marked_cuts_the_code_into_matched_and_unmatched_pieces() -> None:
    pieces = compare.marked("abcdef", [(1, 3), (4, 9)])
    assert pieces == [("a", False), ("bc", True), ("d", False), ("ef", True)]
    assert "".join(text for text, _ in pieces) == "abcdef"
