"""The plan of ``gpu-check``: each step's budget and the total they must fit in.

A GPU machine is lent for 15 minutes of device time, its start included, and one command may
run 10 minutes: the whole check gets 7 minutes (420 s), full or ``--quick``, and every step's
budget lies inside it, so no step ends "not run" for lack of time. ``gpu-check --plan``
prints the plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from graders.gpu_check.context import Step

TOTAL_S = 420.0


def budgets(steps: Sequence[Step], quick: bool) -> list[tuple[str, float]]:
    """(step, budget) in order."""
    return [(step.name, step.budget(quick)) for step in steps]


def problems(steps: Sequence[Step]) -> list[str]:
    """Why the plan does not add up (empty when it does), for the full run and --quick."""
    found = []
    for quick in (False, True):
        mode = "--quick" if quick else "full"
        listed = budgets(steps, quick)
        total = sum(budget for _, budget in listed)
        if total > TOTAL_S:
            found.append(f"{mode}: the budgets add up to {total:g} s, over {TOTAL_S:g} s")
        found += [f"{mode}: {name} has no budget" for name, budget in listed if budget <= 0]
    return found


def lines(steps: Sequence[Step]) -> list[str]:
    """The plan as a table: each step's budget, full and --quick, and the totals."""
    full, quick = budgets(steps, False), dict(budgets(steps, True))
    rows = ["| step | full s | --quick s |", "|---|---|---|"]
    rows += [f"| {name} | {budget:g} | {quick[name]:g} |" for name, budget in full]
    rows.append(
        f"| total (at most {TOTAL_S:g}) | {sum(b for _, b in full):g} | {sum(quick.values()):g} |"
    )
    return rows + [f"plan problem: {problem}" for problem in problems(steps)]
