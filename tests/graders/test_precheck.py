"""The checks before anything runs: a clear, short rejection for any source."""

from __future__ import annotations

from graders.grading import precheck

GOOD = "def f(a):\n    return a\n"


def test_deep_nesting_is_a_short_rejection_not_a_crash() -> None:
    parens = "x = " + "(" * 100_000 + ")" * 100_000 + "\n" + GOOD
    unary = "x = " + "-" * 200_000 + "1\n" + GOOD
    for source in (parens, unary):
        problem, _ = precheck.find_problem(source, "f", 10**7)
        assert problem is not None and "resubmit" in problem
        assert len(problem) < 400  # the offending line is quoted, but only its start
