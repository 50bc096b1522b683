"""Run the steps of ``gpu-check``, each in a child process with its own time budget.

A child (``python -c "...child_main()" STEP DEVICE QUICK RESULT``) runs one step and saves its
rows as it goes. The parent kills the child's whole process group when the step's budget
(never past the run's total budget) is spent, and records a crash, an exception or a timeout
as that step's failure; the steps after it still run. The sandboxes a killed child started die
with it (bwrap's --die-with-parent), and the engine sweeps their groups at the next start.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from graders.gpu_check.context import Step, StepContext
from graders.gpu_check.plan import TOTAL_S
from graders.gpu_check.results import NEEDS_GPU, Row, StepOutcome, rows_from
from graders.gpu_check.steps import BY_NAME
from graders.locations import REPO_ROOT

MIN_STEP_S = 10.0  # less than this left: the step is recorded as not run
_CHILD = "from graders.gpu_check.runner import child_main; child_main()"
_TAIL = 4000


def child_main(argv: list[str] | None = None) -> None:
    """Child side: run one step; exit 1 (rows saved, the traceback on stderr) if it raised."""
    name, device, quick, result = argv if argv is not None else sys.argv[1:5]
    ctx = StepContext(device, quick == "1", Path(result))
    ctx.save()
    try:
        _resolve(name)(ctx)
    except BaseException as exc:
        ctx.raw["error"] = f"{type(exc).__name__}: {exc}"
        ctx.save()
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)  # no atexit or thread joins: a stuck sandbox thread must not hold the exit
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _resolve(name: str) -> Callable[[StepContext], None]:
    """A step of the list, or ``package.module:function`` (how the tests run steps that
    crash or hang on purpose)."""
    if name in BY_NAME:
        return BY_NAME[name].run
    module, _, function = name.partition(":")
    found: Callable[[StepContext], None] = getattr(importlib.import_module(module), function)
    return found


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    # Warm runners only where the step asks for them (a worker sets GRADERS_WARM=1).
    env["GRADERS_WARM"] = "0"
    return env


def _read(result: Path) -> tuple[list[Row], dict[str, object]]:
    try:
        data = json.loads(result.read_text())
    except (OSError, ValueError):
        return [], {}
    return rows_from(data.get("rows") or []), dict(data.get("raw") or {})


def run_step(step: Step, device: str, quick: bool, budget_s: float, log: list[str]) -> StepOutcome:
    outcome = StepOutcome(step.name, "ok", budget_s=budget_s)
    with tempfile.TemporaryDirectory(prefix=f"gpu-check-{step.name}-") as folder:
        result, output = Path(folder) / "result.json", Path(folder) / "output.txt"
        command = [sys.executable, "-c", _CHILD, step.name, device, "1" if quick else "0"]
        began = time.monotonic()
        with open(output, "wb") as sink:
            child = subprocess.Popen(
                [*command, str(result)],
                cwd=REPO_ROOT,
                env=_child_env(),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: killed whole at the budget
            )
            try:
                code = child.wait(timeout=budget_s)
            except subprocess.TimeoutExpired:
                code = None
                _kill_group(child)
        outcome.seconds = time.monotonic() - began
        outcome.rows, outcome.raw = _read(result)
        text = output.read_text(errors="replace")
    log.append(f"===== step {step.name} ({outcome.seconds:.1f} s of {budget_s:.0f} s)\n{text}")
    outcome.log_tail = text[-_TAIL:]
    if code is None:
        outcome.status = "timed out"
        outcome.error = f"stopped at its budget of {budget_s:.0f} s"
        if outcome.raw.get("progress"):
            outcome.error += f" ({outcome.raw['progress']})"
    elif code != 0:
        outcome.status = "failed"
        outcome.error = str(outcome.raw.get("error") or _last_line(text) or f"exit status {code}")
    elif outcome.rows and all(row.status == NEEDS_GPU for row in outcome.rows):
        outcome.status = NEEDS_GPU  # ran, and found nothing this device can answer
    if outcome.status in ("failed", "timed out"):
        outcome.rows.append(Row(f"step {step.name}", "completes", outcome.error or "", "FAIL"))
    return outcome


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=30)


def _one(
    step: Step, device: str, quick: bool, budget: float, total_s: float, log: list[str], echo: bool
) -> StepOutcome:
    if budget <= 0:
        outcome = StepOutcome(step.name, "not run", error=f"the {total_s:.0f} s total was spent")
        outcome.rows.append(Row(f"step {step.name}", "runs", outcome.error or "", "FAIL"))
        return outcome
    if echo:
        print(f"== {step.name}: {step.title} (budget {budget:.0f} s)", flush=True)
    return run_step(step, device, quick, budget, log)


def follow_probe(outcome: StepOutcome) -> None:
    """Each step is a process of its own, so the probe's answer reaches the later steps through
    their environment: where it chose the harness's synchronise (the driver's lock failed or
    hung there), their gradings do not try the lock again."""
    if outcome.name == "probe" and outcome.raw.get("gpu_completion") == "harness_sync":
        os.environ["GRADERS_CUDA_LOCK"] = "0"


def run_all(
    steps: list[Step],
    device: str,
    quick: bool,
    log: list[str],
    total_s: float = TOTAL_S,
    echo: bool = True,
    factor: float = 1.0,
) -> list[StepOutcome]:
    """Every step in order; ``factor`` multiplies each step's budget and the total."""
    total_s *= factor
    deadline = time.monotonic() + total_s
    outcomes: list[StepOutcome] = []
    for step in steps:
        left = deadline - time.monotonic()  # under MIN_STEP_S: no budget, the step is not run
        budget = min(step.budget(quick) * factor, left) if left >= MIN_STEP_S else 0.0
        outcome = _one(step, device, quick, budget, total_s, log, echo)
        outcomes.append(outcome)
        follow_probe(outcome)
        if echo:
            for row in outcome.rows:
                print(
                    f"   {row.status:>12}  {row.measure}: {row.value}  [{row.target}]", flush=True
                )
            if outcome.status in ("failed", "timed out") and outcome.log_tail:
                print("   " + "\n   ".join(outcome.log_tail.strip().splitlines()[-15:]), flush=True)
    return outcomes
