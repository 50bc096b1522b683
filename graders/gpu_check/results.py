"""Rows, step outcomes, the pass/fail rule and the report files of ``gpu-check``.

Pure data and text: nothing here grades, measures or imports torch, so the tests check the
table, the JSON and the exit code on synthetic results.

A row's ``status`` is one of:

``pass`` / ``FAIL``
    the measure against its target (a failed step always adds a ``FAIL`` row);
``info``
    recorded, judged by nothing: a GPU target on a CPU run, or a fact such as the weaker
    containment a machine allows;
``needs a GPU``
    only a GPU can answer it (ncu's counters, a CUDA C++ build, the driver's lock): on a CPU
    run that is expected, neither a failure nor "not run"; on a CUDA run it is a failure;
``skipped``
    the older name of ``needs a GPU``, judged the same;
``not measured``
    the value could not be taken here; a failure on CUDA, where the check is meant to take it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

NEEDS_GPU = "needs a GPU"
STATUSES = ("pass", "FAIL", "info", NEEDS_GPU, "skipped", "not measured")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
MARKDOWN, JSON_FILE, LOG_FILE = "gpu-check.md", "gpu-check.json", "gpu-check.log"


@dataclass
class Row:
    measure: str
    target: str
    value: str
    status: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES}")


@dataclass
class StepOutcome:
    """One step as the parent saw it: its rows (from the child), how it ended, its time."""

    name: str
    status: str  # "ok" | "failed" | "timed out" | "needs a GPU" | "not run"
    seconds: float = 0.0
    budget_s: float = 0.0
    rows: list[Row] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    log_tail: str = ""


def judged(ok: bool, applies: bool = True) -> str:
    """``pass``/``FAIL`` where the target applies on this run, else ``info``."""
    if not applies:
        return "info"
    return "pass" if ok else "FAIL"


def counts_as_failure(status: str, device: str) -> bool:
    if status == "FAIL":
        return True
    return device != "cpu" and status in (NEEDS_GPU, "skipped", "not measured")


def step_failed(step: StepOutcome) -> bool:
    return step.status in ("failed", "timed out", "not run")


def exit_code(steps: list[StepOutcome], device: str, probe_rows: Sequence[Row] = ()) -> int:
    """Non-zero when a step failed, timed out or did not run, or any row counts as a failure."""
    rows = [*probe_rows, *(row for step in steps for row in step.rows)]
    if any(step_failed(step) for step in steps):
        return EXIT_FAILED
    if any(counts_as_failure(row.status, device) for row in rows):
        return EXIT_FAILED
    return EXIT_OK


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip() or "-"


def table(rows: list[Row]) -> list[str]:
    lines = ["| measure | target | value | pass |", "|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {_cell(row.measure)} | {_cell(row.target)} | {_cell(row.value)} "
            f"| {_cell(row.status)} |"
        )
    return lines


def markdown(
    header: list[str],
    probe_lines: list[str],
    probe_rows: list[Row],
    steps: list[StepOutcome],
    device: str,
) -> str:
    rows = [*probe_rows, *(row for step in steps for row in step.rows)]
    code = exit_code(steps, device, probe_rows)
    lines = [
        "# GPU check of the grading engine",
        "",
        *header,
        "",
        "## Containment",
        "",
        "```",
        *probe_lines,
        "```",
        "",
        "## Measures",
        "",
        *table(rows),
        "",
        "## Steps",
        "",
        "| step | ended | seconds | budget s |",
        "|---|---|---|---|",
    ]
    for step in steps:
        ended = step.status + (f": {step.error}" if step.error else "")
        lines.append(
            f"| {_cell(step.name)} | {_cell(ended[:300])} | {step.seconds:.1f} "
            f"| {step.budget_s:.0f} |"
        )
    failing = [r.measure for r in rows if counts_as_failure(r.status, device)]
    failing += [
        f"step {s.name} {s.status}"
        for s in steps
        if step_failed(s) and f"step {s.name}" not in failing
    ]
    lines += [
        "",
        f"Exit status {code}: "
        + ("every measure passed or is informational." if code == 0 else "failed: ")
        + "; ".join(failing),
    ]
    return "\n".join(lines) + "\n"


def as_json(
    meta: dict[str, Any],
    probe: dict[str, Any],
    probe_rows: list[Row],
    steps: list[StepOutcome],
    device: str,
) -> dict[str, Any]:
    return {
        **meta,
        "device": device,
        "containment": probe,
        "containment_rows": [asdict(row) for row in probe_rows],
        "steps": [asdict(step) for step in steps],
        "exit_code": exit_code(steps, device, probe_rows),
    }


def write(out: Path, text: str, data: dict[str, Any], log: str) -> list[Path]:
    """The table, the raw JSON and the steps' output: three files, so all come back from a
    device machine (which returns at most eight)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / MARKDOWN, out / JSON_FILE, out / LOG_FILE]
    paths[0].write_text(text)
    paths[1].write_text(json.dumps(data, indent=2, default=str) + "\n")
    paths[2].write_text(log)
    return paths


def rows_from(data: list[dict[str, Any]]) -> list[Row]:
    keys = ("measure", "target", "value", "status")
    return [Row(**{key: str(item.get(key, "")) for key in keys}) for item in data]
