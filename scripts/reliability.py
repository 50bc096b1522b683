"""Grade every hostile case (tests/hostile/cases) in the real sandbox; write docs/RELIABILITY.md.

    python -m scripts.reliability           # `make reliability`

Each case is graded the way tests/hostile/test_hostile.py grades it, followed by an honest
vector-add grading in the same process. The document lists every case with what it got, the
totals that must stay at zero, and what each phase of an honest grading costs.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine import describe
from tests.hostile.corpus import HONEST, Case, Exercises, Outcome, iter_graded, run_grading
from tests.hostile.corpus import unearned_credit as is_unearned

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "RELIABILITY.md"
# More than any exercise's limits allow: 20 s set-up, 2 x 6 s timed, a 60 s notebook, margin.
WALL_LIMIT_S = 90.0
PHASES = ("sandbox_start_s", "setup_s", "check_s", "timing_s", "total_s")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(case: Case, outcome: Outcome, honest: list[str]) -> str:
    got = f"{outcome.verdict}/{outcome.points:g}"
    flags = ", ".join(outcome.flags) or "-"
    problems = outcome.problems + honest
    result = "pass" if not problems else "FAIL: " + "; ".join(problems)
    return (
        f"| `{case.name}` | {_cell(case.attack)} | {case.expected()} | {got} | {flags} "
        f"| {outcome.seconds:.1f} | {_cell(result)[:400]} |"
    )


def _honest_costs(exercises: Exercises, repeats: int = 3) -> list[dict[str, Any]]:
    reports = []
    for _ in range(repeats):
        outcome = run_grading(exercises.get("vector-add"), HONEST.read_text())
        if outcome.report is not None:
            reports.append(outcome.report.get("timings") or {})
    return reports


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def render(
    rows: list[str], totals: dict[str, int], costs: list[dict[str, Any]], wall: float
) -> str:
    lines = [
        "# Reliability: the hostile corpus",
        "",
        "Written by `make reliability` (scripts/reliability.py); do not edit by hand. Every case",
        "in tests/hostile/cases/ is graded through the real sandbox on CPU (quick copies of the",
        "exercises: vector-add with n = 4194304, layernorm and softmax at 256 x 512, softmax at",
        "2048 x 2048 and gelu-residual at 2048 x 1024 where the timed inputs come from the",
        "grader's pool, the fusion notebook with an 8 s cell limit), each followed by an honest",
        "vector-add grading that must stay `correct` with no tamper flags. A case marked",
        "`compare` is timed beside the reference and naive versions, `profile` has its profile",
        "taken after the grade, `warm` runs on warm runners right after another student's",
        "grading on the same slot. Expected and got read `verdict/points` (performance points;",
        "`any`: not asserted); every attack that also computes does so slowly, so any point it",
        "gets is unearned.",
        "",
        "| case | attack | expected | got | flags | wall s | result |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## Totals",
        "",
        f"- cases tried: {totals['cases']}",
        f"- cases as expected: {totals['passed']}",
        f"- unearned credit (points or a pass the case should not get): {totals['unearned']}",
        f"- grader failures caused by a submission: {totals['grader_failures']}",
        f"- limits exceeded (a grading past {WALL_LIMIT_S:g} s, or a case that left the sandbox "
        f"broken: the honest grading after it failed or was flagged): {totals['limits']}",
        f"- wall time of the whole run: {wall:.0f} s",
        # Wall times and phase costs depend on the machine; the verdicts must not.
        "- machine: " + ", ".join(f"{key} {value}" for key, value in describe().items()),
        "",
        "Unearned credit, grader failures and limits exceeded must each be 0.",
        "",
        "## What the defences cost",
        "",
        "Phases of an honest vector-add grading on the quick copy (median of "
        f"{len(costs)}; the report's `timings`):",
        "",
        "| phase | seconds | what it pays for |",
        "|---|---|---|",
    ]
    meaning = {
        "sandbox_start_s": "sandbox, containment groups, seccomp and torch import in the harness",
        "setup_s": "empty-call baseline is before this; importing the submission, frozen after",
        "check_s": "check sizes and check cases, each read from the frozen sandbox's memory",
        "timing_s": "timed calls: thaw/go/done/freeze, CPU counters read outside, flushes",
        "total_s": "the whole grading, calibration included",
    }
    for phase in PHASES:
        values = [float(c[phase]) for c in costs if c.get(phase) is not None]
        lines.append(f"| {phase} | {_median(values):.2f} | {meaning[phase]} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    began = time.monotonic()
    rows: list[str] = []
    totals = dict(cases=0, passed=0, unearned=0, grader_failures=0, limits=0)
    with tempfile.TemporaryDirectory() as folder:
        exercises = Exercises(Path(folder))
        for case, outcome, honest in iter_graded(exercises):
            totals["cases"] += 1
            totals["passed"] += not (outcome.problems or honest)
            totals["unearned"] += is_unearned(case, outcome)
            totals["grader_failures"] += outcome.report is None
            totals["limits"] += bool(honest) or outcome.seconds > WALL_LIMIT_S
            rows.append(_row(case, outcome, honest))
            print(rows[-1], flush=True)
        costs = _honest_costs(exercises)
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(render(rows, totals, costs, time.monotonic() - began))
    print(f"wrote {DOC.relative_to(REPO)}: {totals}")
    bad = totals["unearned"] + totals["grader_failures"] + totals["limits"]
    return 1 if bad or totals["passed"] != totals["cases"] else 0


if __name__ == "__main__":
    sys.exit(main())
