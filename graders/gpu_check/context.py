"""What a step of ``gpu-check`` is, and what it writes: :class:`Step` and :class:`StepContext`.

A step writes rows (measure, target, value, status) and raw figures through its context, which
saves them to the result file after every change, so a step stopped at its time budget still
leaves what it had measured (and ``raw["progress"]``, which the parent quotes in the timeout's
row). Targets are a GPU machine's: on a CPU run a timing target is recorded as ``info``, and
what only a GPU can answer is a row of its own status, ``needs a GPU``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from graders.gpu_check.results import NEEDS_GPU, Row, judged

GIB = 1024**3


class StepContext:
    """What a step writes; saved to ``path`` (JSON) after every row and on request."""

    def __init__(self, device: str, quick: bool, path: Path | None = None) -> None:
        self.device, self.quick, self.path = device, quick, path
        self.cuda = device.startswith("cuda")
        self.rows: list[Row] = []
        self.raw: dict[str, Any] = {}
        # Held while saving; a step whose threads change ``raw`` holds it around the change.
        self.lock = threading.RLock()

    def row(self, measure: str, target: str, value: str, status: str) -> None:
        self.rows.append(Row(measure, target, value, status))
        self.save()

    def timing(self, measure: str, target: str, value: str, ok: bool) -> None:
        """A row whose target is a GPU machine's timing target: ``info`` on a CPU run."""
        self.row(
            measure, target if self.cuda else f"{target} (on cuda)", value, judged(ok, self.cuda)
        )

    def needs_gpu(self, measure: str, why: str = "only a GPU can answer it") -> None:
        """What this device cannot take: not a failure on a CPU run, a failure on a GPU's."""
        self.row(measure, "-", why, NEEDS_GPU)

    def save(self) -> None:
        if self.path is None:
            return
        with self.lock:
            tmp = self.path.with_suffix(".tmp")
            data = {"rows": [asdict(r) for r in self.rows], "raw": self.raw}
            tmp.write_text(json.dumps(data, indent=2, default=str))
            tmp.replace(self.path)


@dataclass(frozen=True)
class Step:
    name: str
    title: str
    run: Callable[[StepContext], None]
    budget_s: float  # full run
    quick_budget_s: float

    def budget(self, quick: bool) -> float:
        return self.quick_budget_s if quick else self.budget_s
