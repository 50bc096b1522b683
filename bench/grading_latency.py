"""Where one grading's wall time goes, before and after warm runners; and what reusing the
companions' times costs in accuracy.

.venv/bin/python -m bench.grading_latency [--before 0959196] [--before-warm] [--pairs 5]
    [--reuse-pairs 8] [--no-doc]

1. **Split by phase.** ``vector-add`` ``samples/fast.py`` graded the way the worker grades it
   (``compare=True``, ``profile=True``), at an earlier commit (a git worktree outside the
   repository, cold: every sandbox started by its grading) and now (``GRADERS_WARM=1``, the
   way a Celery worker runs, each grading after the worker has had time to start its next
   runner), interleaved. Each phase is timed by wrapping the engine's functions from outside
   (this script only; nothing in the engine measures itself for it): waiting for a sandbox,
   the import of the submission, the checks, drawing the inputs, copying them in, flushing the
   cache, the calls themselves, verifying outputs, the companions' calls, the profile and
   closing the sandboxes. "graded at" is when the grade was final (``on_graded``).
2. **Companion reuse against timing them every time.** On one warm bench, gradings alternate
   between reusing the companions' medians (the default policy) and measuring them in full
   (no remembered median may be reused). Reported: the median and spread of
   ``relative_to_reference`` and ``speedup_vs_naive`` under each, and the companion calls
   each grading made.

Never a test: nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "BENCHMARKS.md"
TITLE = "## Grading latency: one grading's wall time by phase, and reused companion times"
SLOT = 0
BEFORE_COMMIT = "0959196"
WORKTREE = Path("/tmp/latency-before")
SAMPLE = "exercises/ch15/vector-add/samples/fast.py"
EXERCISE = "exercises/ch15/vector-add"

# Runs in a child process, in the repository given (now or the worktree): wraps the engine's
# functions with timers, grades once and prints the phases as JSON.
_CHILD = r"""
import json, os, sys, time
from collections import defaultdict
sys.path.insert(0, {root!r})
os.chdir({root!r})
spent = defaultdict(float)
counts = defaultdict(int)

def timed(owner, name, label):
    original = getattr(owner, name, None)
    if original is None:
        return
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - began
            counts[label] += 1
    setattr(owner, name, wrapper)

import graders
try:
    from graders.grading import arena, phases
    from graders.measure import flush_size
    from graders.sandbox import session
    from graders.grading import warm
except ImportError:  # a checkout from before graders/ was grouped into folders
    from graders import arena, flush_size, phases, session
    try:
        from graders import warm
    except ImportError:  # or from before warm runners
        warm = None
timed(arena.InputArena, "fill", "draw inputs")
timed(arena.InputArena, "place", "copy inputs in")
timed(flush_size.CacheFlusher, "flush", "flush cache")
timed(phases.Grader, "verify", "verify outputs")
timed(phases.Grader, "spot_check", "spot-check outputs")
timed(phases.Grader, "profile", "profile")
timed(phases.Grader, "load", "import submission")
timed(phases.TimedPhase, "companion_call", "companion calls (all of it)")
timed(phases.TimedPhase, "student_call", "submission calls (all of it)")
timed(session.TrustedChannel, "close", "close sandboxes")
timed(phases.Grader, "check", "checks")
if warm is not None:
    timed(warm.Bench, "take_runner", "wait for a sandbox")
    timed(warm.Bench, "companions_for_grading", "start companions")
else:
    timed(phases.Grader, "start", "start sandboxes")
source = open({sample!r}).read()
kwargs = {{}}
marks = {{}}
began = time.perf_counter()
if "on_graded" in graders.grade.__code__.co_varnames:
    kwargs["on_graded"] = lambda report: marks.setdefault("graded_at", time.perf_counter() - began)
runs = int(os.environ.get("LATENCY_GRADINGS", "1"))
pause = float(os.environ.get("LATENCY_PAUSE_S", "0"))
rows = []
for index in range(runs):
    spent.clear(); counts.clear(); marks.clear()
    began = time.perf_counter()
    report = graders.grade({exercise!r}, source, device="cpu", slot={slot}, **kwargs)
    wall = time.perf_counter() - began
    rows.append({{
        "wall_s": wall,
        "graded_at_s": marks.get("graded_at", wall),
        "verdict": report["verdict"],
        "flags": report["flags"],
        "median_s": (report.get("performance") or {{}}).get("median_s"),
        "runs": (report.get("performance") or {{}}).get("runs"),
        "reused": (report.get("performance") or {{}}).get("companions_reused"),
        "timings": report["timings"],
        "phases": dict(spent),
        "counts": dict(counts),
    }})
    time.sleep(pause)
print(json.dumps(rows))
if warm is not None:
    warm.close_all()
# Leave without the interpreter's shutdown: a sandbox's pipe reader (a daemon thread) still
# in a read when it finalizes that pipe's buffered reader aborts the process (SIGABRT).
sys.stdout.flush()
os._exit(0)
"""


def _child(root: Path, gradings: int, env: dict[str, str]) -> list[dict[str, Any]]:
    code = _CHILD.format(root=str(root), sample=SAMPLE, exercise=EXERCISE, slot=SLOT)
    out = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-c", code],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "LATENCY_GRADINGS": str(gradings), **env},
    )
    rows: list[dict[str, Any]] = json.loads(out.stdout.strip().splitlines()[-1])
    return rows


def split(before_commit: str, pairs: int, before_warm: bool = False) -> dict[str, Any]:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(WORKTREE), before_commit],
        check=True,
        capture_output=True,
    )
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    try:
        for _ in range(pairs):
            # A worker grades many: the first of a process is cold, the rest find warm
            # runners. Three per process with a pause for the next runner, the first dropped.
            warm = {"GRADERS_WARM": "1", "LATENCY_PAUSE_S": "5"}
            if before_warm:
                before += _child(WORKTREE, 3, warm)[1:]
            else:
                before += _child(WORKTREE, 1, {"GRADERS_WARM": "0"})
            after += _child(REPO, 3, warm)[1:]
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(WORKTREE)],
            check=False,
            capture_output=True,
        )
    return {"commit": before_commit, "before": before, "after": after, "before_warm": before_warm}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _phase_medians(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    names = sorted({name for row in rows for name in row["phases"]})
    result = {name: _median([row["phases"].get(name, 0.0) for row in rows]) for name in names}
    result["graded at (grade final)"] = _median([row["graded_at_s"] for row in rows])
    result["whole grading (wall)"] = _median([row["wall_s"] for row in rows])
    return result


_REUSE_CHILD = r"""
import json, os, sys, time
sys.path.insert(0, {root!r})
os.environ["GRADERS_WARM"] = "1"
import graders
try:
    from graders.measure import companion_times
    from graders.grading import phases, warm
except ImportError:  # a checkout from before graders/ was grouped into folders
    from graders import companion_times, phases, warm
calls = {{"n": 0}}
original = phases.Grader.companion_call
def counting(self, *args, **kwargs):
    calls["n"] += 1
    return original(self, *args, **kwargs)
phases.Grader.companion_call = counting
source = open({sample!r}).read()
rows = []
MAX_REUSES = companion_times.MAX_REUSES
for index in range({pairs} * 2 + 1):
    reuse = index % 2 == 1
    # In full: no remembered median may be reused at all. (A drift threshold below 0 did not
    # do it: the check's bar is the larger of the threshold and the calls' noise.)
    companion_times.MAX_REUSES = MAX_REUSES if reuse else 0
    calls["n"] = 0
    report = graders.grade({exercise!r}, source, device="cpu", slot={slot}, profile=False)
    perf = report.get("performance") or {{}}
    rows.append({{
        "policy": "reuse" if reuse else "full",
        "first": index == 0,
        "relative_to_reference": perf.get("relative_to_reference"),
        "speedup_vs_naive": perf.get("speedup_vs_naive"),
        "reused": perf.get("companions_reused"),
        "companion_calls": calls["n"],
        "flags": report["flags"],
    }})
    time.sleep(3)
warm.close_all()
print(json.dumps(rows))
sys.stdout.flush()
os._exit(0)  # as in _CHILD: no interpreter shutdown racing the pipe readers
"""


def reuse(pairs: int) -> dict[str, Any]:
    code = _REUSE_CHILD.format(
        root=str(REPO), sample=SAMPLE, exercise=EXERCISE, slot=SLOT, pairs=pairs
    )
    out = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    rows: list[dict[str, Any]] = json.loads(out.stdout.strip().splitlines()[-1])
    rows = [row for row in rows if not row["first"]]  # the first fills the bench
    summary: dict[str, Any] = {}
    for policy in ("full", "reuse"):
        mine = [row for row in rows if row["policy"] == policy]
        summary[policy] = {
            "gradings": len(mine),
            "reused_both": sum(1 for row in mine if row["reused"] and len(row["reused"]) == 2),
            "companion_calls": _median([row["companion_calls"] for row in mine]),
        }
        for figure in ("relative_to_reference", "speedup_vs_naive"):
            values = [row[figure] for row in mine if row[figure]]
            summary[policy][figure] = {
                "median": _median(values),
                "min": min(values) if values else None,
                "max": max(values) if values else None,
                "cv": statistics.pstdev(values) / statistics.fmean(values)
                if len(values) > 1
                else None,
            }
    return {"pairs": pairs, "rows": rows, "summary": summary}


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown(result: dict[str, Any]) -> list[str]:
    from bench import machine

    lines = [TITLE, ""]
    described = machine.describe()
    lines.append(
        f"Measured {result['measured']} on {described.get('cpu')} ({described.get('cores')} "
        f"cores, last-level cache {described.get('last-level cache')}), 1-minute load average "
        f"{result['load_before']:.1f} before starting; `python -m bench.grading_latency`."
    )
    lines.append("")
    part = result.get("split")
    if part:
        before, after = _phase_medians(part["before"]), _phase_medians(part["after"])
        lines += [
            f"### One vector-add grading by phase, {part['commit']} "
            f"({'warm' if part.get('before_warm') else 'cold'}) against now (warm)",
            "",
            "`samples/fast.py` with `compare=True, profile=True` as the worker grades; medians "
            f"of {len(part['before'])} gradings before and {len(part['after'])} after, "
            "interleaved. A phase's time includes the phases inside it (the submission's calls "
            "include drawing, copying, flushing and verifying).",
            "",
            "| phase | before | now |",
            "|---|---|---|",
        ]
        for name in sorted(set(before) | set(after)):
            lines.append(f"| {name} | {_s(before.get(name))} | {_s(after.get(name))} |")
        counts_before = part["before"][0]["counts"] if part["before"] else {}
        counts_after = part["after"][0]["counts"] if part["after"] else {}
        lines += [
            "",
            "Calls per grading (first of each): "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts_before.items()))
            + " before; "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts_after.items()))
            + " now.",
            "",
            "Verdicts before: "
            + ", ".join(row["verdict"] for row in part["before"])
            + "; now: "
            + ", ".join(row["verdict"] for row in part["after"])
            + ". Flags: "
            + json.dumps([row["flags"] for row in part["before"] + part["after"] if row["flags"]]),
            "",
        ]
    part = result.get("reuse")
    if part:
        full, reused = part["summary"]["full"], part["summary"]["reuse"]
        lines += [
            "### Reusing the companions' times against timing them in full every grading",
            "",
            f"One warm bench, {part['pairs']} pairs of gradings alternating between the two "
            "policies (the first grading, which fills the bench, left out).",
            "",
            "| | timed in full | reused (default) |",
            "|---|---|---|",
            f"| gradings | {full['gradings']} | {reused['gradings']} |",
            f"| both medians reused | {full['reused_both']} | {reused['reused_both']} |",
            f"| companion calls per grading (median) | {full['companion_calls']} | "
            f"{reused['companion_calls']} |",
        ]
        for figure in ("relative_to_reference", "speedup_vs_naive"):
            a, b = full[figure], reused[figure]
            lines.append(
                f"| {figure}: median (min-max), CV | {_x(a['median'])} ({_x(a['min'])}-"
                f"{_x(a['max'])}), {_x(a['cv'])} | {_x(b['median'])} ({_x(b['min'])}-"
                f"{_x(b['max'])}), {_x(b['cv'])} |"
            )
        lines.append("")
    return lines


def write_section(lines: list[str], doc: Path = DOC) -> None:
    text = doc.read_text() if doc.exists() else "# Grading engine benchmarks\n"
    start = text.find(TITLE)
    if start >= 0:
        end = text.find("\n## ", start + len(TITLE))
        text = text[:start] + text[end + 1 if end >= 0 else len(text) :]
    doc.write_text(text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default=BEFORE_COMMIT)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--reuse-pairs", type=int, default=8)
    parser.add_argument("--no-doc", action="store_true")
    # Both sides on warm runners: the cost of a change to the grading itself.
    parser.add_argument("--before-warm", action="store_true")
    parser.add_argument("--only", choices=("split", "reuse"))
    args = parser.parse_args()
    result: dict[str, Any] = {
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before": os.getloadavg()[0],
    }
    if args.only in (None, "split"):
        result["split"] = split(args.before, args.pairs, args.before_warm)
    if args.only in (None, "reuse"):
        result["reuse"] = reuse(args.reuse_pairs)
    Path("/tmp/grading_latency.json").write_text(json.dumps(result, indent=1))
    lines = markdown(result)
    print("\n".join(lines))
    if not args.no_doc:
        write_section(lines)


if __name__ == "__main__":
    main()
