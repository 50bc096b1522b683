"""The ``hostile`` step of ``gpu-check``: the hostile corpus graded on the device.

One case of each class of tests/hostile (of the classes in ``QUICK_CLASSES`` with
``--quick``; the whole corpus runs in tests/hostile/test_hostile.py), each followed by an
honest grading, judged by the corpus's own rules (tests/hostile/corpus.py, as scripts/reliability.py
judges them). The corpus builds its quick copies of the exercises for the device it is told
(``GRADERS_HOSTILE_DEVICE``): that device's sizes and curve. On a GPU one grading runs at a
time (graders/gpu_check/sample_steps.py says why).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from graders.gpu_check.context import StepContext
from graders.gpu_check.results import judged
from graders.gpu_check.sample_steps import lanes as lanes_for

# --quick: the classes whose attacks go through what differs on a GPU (timing windows, the
# outputs read back, inputs drawn into device memory, work outside the calls, the freeze,
# the limits); each case and its honest grading take 10-20 s of a busy 2-core machine, and
# eight took 117 s there, past the quick plan's share.
QUICK_CLASSES = (
    "forged_times",
    "output_lies",
    "repeated_inputs",
    "work_outside",
    "freeze",
    "limits",
)


def hostile(ctx: StepContext) -> None:
    """Every case of tests/hostile graded on the device, each followed by an honest grading,
    judged by the corpus's own rules (tests/hostile/corpus.py, as scripts/reliability.py)."""
    os.environ["GRADERS_HOSTILE_DEVICE"] = ctx.device  # read when the corpus is imported
    import tempfile
    from concurrent.futures import ThreadPoolExecutor
    from importlib.util import find_spec

    from tests.hostile import corpus

    files = corpus.case_files()
    notebooks_graded = find_spec("nbformat") is not None and find_spec("nbgrader") is not None
    skipped_notebooks = [] if notebooks_graded else [p for p in files if p.suffix == ".ipynb"]
    cases = [corpus.load_case(p) for p in files if p not in skipped_notebooks]
    firsts: dict[str, Any] = {}
    for case in cases:  # one case of each class
        firsts.setdefault(case.klass, case)
    cases = [
        case for klass, case in firsts.items() if not ctx.quick or klass in QUICK_CLASSES
    ] or list(firsts.values())
    lanes = lanes_for(ctx.device)
    results: list[dict[str, Any]] = []
    ctx.raw.update(lanes=lanes, cases=len(cases), results=results)
    ctx.raw["notebook_cases_not_run"] = [p.name for p in skipped_notebooks]
    with tempfile.TemporaryDirectory() as folder:
        exercises = corpus.Exercises(Path(folder))
        for slug in sorted({case.exercise for case in cases} | {"vector-add"}):
            exercises.get(slug)  # built before the lanes share them

        def record(entry: dict[str, Any]) -> None:
            with ctx.lock:  # lanes finish concurrently: one writer of results at a time
                results.append(entry)
                held = sum(not r["problems"] for r in results)
                ctx.raw["progress"] = f"{len(results)} of {len(cases)} cases graded, {held} held"
                ctx.save()

        def one(case: Any) -> None:
            try:
                outcome = corpus.grade_case(case, exercises)
                honest = corpus.grade_honest(exercises)
            except Exception as exc:  # a bug of ours, not the case's doing: recorded, go on
                record({"case": case.name, "problems": [f"raised {exc!r}"]})
                return
            record(
                {
                    "case": case.name,
                    "expected": case.expected(),
                    "got": f"{outcome.verdict}/{outcome.points:g}",
                    "flags": outcome.flags,
                    "seconds": round(outcome.seconds, 2),
                    "problems": outcome.problems + honest,
                    "unearned": corpus.unearned_credit(case, outcome),
                    "grader_failure": outcome.report is None,
                }
            )

        # Lanes grade on slots of their own (own core and uid), as separate workers would.
        with ThreadPoolExecutor(lanes) as pool:
            list(pool.map(one, cases))
    failed = [r for r in results if r["problems"]]
    value = f"{len(results) - len(failed)} of {len(cases)} cases held ({lanes} lanes)"
    if failed:
        value += "; failed: " + "; ".join(f"{r['case']}: {r['problems'][0]}" for r in failed)[:600]
    if skipped_notebooks:
        value += (
            f"; {len(skipped_notebooks)} notebook cases not run (no nbgrader here; notebooks "
            "are graded on CPU workers)"
        )
    ctx.row(
        f"hostile corpus on {ctx.device} (one case per class"
        + (f", {len(QUICK_CLASSES)} classes)" if ctx.quick else ")"),
        "every case held, honest grading after each clean",
        value,
        judged(not failed and len(results) == len(cases)),
    )
