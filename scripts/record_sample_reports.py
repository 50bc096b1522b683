"""Grade each code exercise's samples once and keep the reports as test fixtures.

    nice python -m scripts.record_sample_reports [exercise ...]

For every code exercise under exercises/ch15 it grades samples/fast.py, samples/slow.py,
samples/wrong.py, samples/crashing.py and the exercise's naive.py (the "naive" sample) with the
real engine (graders.grade, as the Celery task and the command line do) and writes each report to
tests/courseware/submissions/sample_reports/<exercise>/<sample>.json.

Grading them all takes minutes, far too long for the test suite, so the feedback and report-page
tests read these recorded reports instead. Run it again after the report's shape changes.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from graders import grade, iter_exercises

REPO = Path(__file__).resolve().parents[1]
EXERCISES = REPO / "exercises" / "ch15"
OUT = REPO / "tests" / "courseware" / "submissions" / "sample_reports"
SAMPLES = ("fast", "slow", "wrong", "crashing")


def sample_sources(folder: Path) -> dict[str, Path]:
    """The samples this script records for one exercise folder, by sample name."""
    sources = {name: folder / "samples" / f"{name}.py" for name in SAMPLES}
    sources["naive"] = folder / "naive.py"
    return {name: path for name, path in sources.items() if path.is_file()}


def record(exercise: Path) -> None:
    target = OUT / exercise.name
    target.mkdir(parents=True, exist_ok=True)
    for name, path in sample_sources(exercise).items():
        started = time.monotonic()
        report = grade(exercise, path.read_text(encoding="utf-8"), device="cpu")
        (target / f"{name}.json").write_text(
            json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        print(
            f"{exercise.name}/{name}: {report['verdict']} {report['score']:g}/"
            f"{report['max_score']:g} ({time.monotonic() - started:.0f} s)",
            flush=True,
        )


def main(argv: list[str]) -> int:
    wanted = set(argv)
    for spec in iter_exercises(EXERCISES.parent):
        folder = spec.path
        if folder.parent != EXERCISES:
            continue
        if wanted and folder.name not in wanted:
            continue
        record(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
