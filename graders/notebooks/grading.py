"""grade_notebook(): autograde a submitted .ipynb against an nbgrader source notebook.

Flow (the notebook itself never leaves this trusted process):

1. the submission is parsed and validated with nbformat (size first) -> ``rejected``;
2. in a throwaway gradebook, nbgrader's generate_assignment steps record the source
   cells (hidden tests included), then autograde's sanitizing steps restore locked and
   test cells in the submission (graders.notebooks.nbgrader_steps);
3. an IPython kernel starts in the bubblewrap sandbox (graders.sandbox: no network,
   unprivileged uid, rlimits, memory cgroup) and the parent sends it the code cells
   one at a time over ZMQ on unix sockets (graders.notebooks.kernel / runner);
4. each autograded test cell is judged by the parent (below), then nbgrader's
   SaveAutoGrades scores every graded cell (determine_grade), and the report is built.

Threat model
------------
The kernel runs the student's code, so everything inside it is the student's: the
kernel's Python objects, IPython's hooks and display machinery, the messages it sends.
The parent trusts only what it decides itself.

* Cosmetic cheats (defeated). Overriding ``InteractiveShell.showtraceback``,
  ``sys.excepthook`` or ``set_custom_exc``, printing fake "ok" or "Success" text,
  clearing outputs: a test cell passes only if its ``execute_reply`` has status ``ok``
  *and* it carries the cell's proof (next point); outputs never decide a pass. As in
  nbgrader, an error output or stderr text in a test cell still scores 0, so output can
  only cost the student points.
* Errors turned into ``ok`` replies (defeated for generic tricks). Student code can
  patch ``run_cell``/``run_code``, install AST or input transformers, or wrap statements
  in ``try/except`` so that a failing test replies ``ok``. The parent therefore compiles
  every test cell itself, appends one assignment of a fresh random proof (generated in
  the parent, sent with that cell only, so no earlier cell can know it), and sends the
  kernel a loader that ``exec``s the marshalled code object. The reply's user
  expression must return the proof; ipykernel evaluates user expressions only after a
  cell that raised nothing, and the proof is assigned only after the test's last
  statement ran. Because the test is compiled outside, transformers and ``compile``
  patches in the kernel cannot rewrite it.
* Residual risk (not defeated). Student code that reads this module can patch ``exec``
  or ``marshal.loads`` in the kernel to pull the proof constant out of the code object
  without running the test. In-process checks cannot stop an adversary who owns the
  interpreter; nbgrader's model (tests run in the student's namespace) rules out
  running tests elsewhere. Partial credit read from a test cell's displayed value is
  likewise only as honest as the kernel's display hook. Such an attack needs deliberate
  code in the submitted notebook, which staff can see.
* Hidden tests. Their text is sent to the kernel only when their cell runs, as
  bytecode. The student-visible parts of the report are: ``message`` (written here,
  never from kernel text) and each cell's ``output``. Cells with hidden tests show only
  passed/failed; a visible test cell that runs after any hidden test cell shows only
  passed/failed too, since code planted earlier could have captured the hidden test
  and print it from there. Kernel stdout/stderr are never reported.
* Resources. Time per cell and in total, output per cell (kept and flood limits),
  ZMQ message size and queue length, memory and processes via the sandbox.
* The parent itself parses the submission with nbformat (size-limited, validated) and
  only ever exchanges protocol messages with the kernel; it never evaluates anything
  the kernel sends.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from nbformat import NotebookNode
from nbformat.v4 import new_output

from graders.errors import GraderError
from graders.notebooks import kernel as kernel_mod
from graders.notebooks import nbgrader_steps, runner, wrapping
from graders.notebooks.spec import (
    CellInfo,
    NotebookExerciseSpec,
    load_notebook_exercise,
    spec_for_source,
)
from graders.report.types import CellReport, Report, Verdict
from graders.sandbox import launch as sandbox

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The start of the one-line loader wrapping.wrap_test sends; a traceback frame showing it is ours.
_LOADER_MARK = "exec(__import__('marshal')"
_STARTUP_S = 60.0


def _resolve(target: NotebookExerciseSpec | str | Path) -> NotebookExerciseSpec:
    if isinstance(target, NotebookExerciseSpec):
        return target
    path = Path(target)
    if path.is_dir():
        return load_notebook_exercise(path)
    return spec_for_source(path)


def parse_submission(submission: bytes | str, limit_bytes: int) -> tuple[NotebookNode | None, str]:
    """(notebook, "") or (None, student-facing reason it is not a gradable notebook)."""
    import nbformat

    data = submission.encode("utf-8") if isinstance(submission, str) else bytes(submission)
    if len(data) > limit_bytes:
        return None, (
            f"Your notebook is {len(data) // 1024} KiB, over the {limit_bytes // 1024} KiB "
            "limit. Clear its outputs (Kernel > Restart & Clear Output), save and resubmit."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "Your file is not a Jupyter notebook (it is not UTF-8 text)."
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises many kinds for malformed input
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        return None, (
            f"Your file is not a valid Jupyter notebook ({reason}). Upload the .ipynb "
            "file saved by Jupyter, not a script or an export."
        )
    return nb, ""


def _report(
    spec: NotebookExerciseSpec,
    verdict: Verdict,
    message: str,
    *,
    score: float = 0.0,
    needs_manual_grade: bool = False,
    cells: list[CellReport] | None = None,
    timings: dict[str, float | None] | None = None,
) -> Report:
    # The same envelope as code exercises (graders/report/types.py) plus the cells.
    measured = timings or {}
    return {
        "exercise": spec.slug,
        "exercise_hash": spec.content_hash,
        "kind": "notebook",
        "verdict": verdict,
        "message": message,
        "gradable": verdict != "rejected",
        "score": round(score, 3),
        "max_score": spec.max_score,
        "needs_manual_grade": needs_manual_grade,
        "cells": cells or [],
        "flags": [],
        "correctness": None,
        "performance": None,
        "peak": None,
        "profile": None,
        "device": {"kind": "cpu", "name": None},
        "timings": {
            "sandbox_start_s": measured.get("sandbox_start_s"),
            "setup_s": None,
            "check_s": None,
            "timing_s": None,
            "total_s": measured.get("total_s"),
            "run_s": measured.get("run_s"),
        },
        "stderr": None,
        "stdout": None,
        "traceback": None,
    }


def _grade_id(cell: NotebookNode) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta.get("grade_id") if isinstance(meta, dict) else None


def _is_test(cell: NotebookNode) -> bool:
    from nbgrader import utils

    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


class _Judge:
    """Wraps test cells before they run and turns run results into nbgrader outputs."""

    def __init__(self, infos: dict[str, CellInfo]) -> None:
        self.infos = infos
        self.wrapped: dict[int, wrapping.WrappedTest] = {}

    def wrap(self, index: int, cell: NotebookNode) -> wrapping.WrappedTest | None:
        if not _is_test(cell):
            return None
        grade_id = _grade_id(cell) or f"cell-{index + 1}"
        info = self.infos.get(grade_id)
        hidden = info is None or info.hidden_tests
        self.wrapped[index] = wrapping.wrap_test(cell.source, grade_id, show_source=not hidden)
        return self.wrapped[index]

    def settle(self, nb: NotebookNode, run: runner.RunResult) -> None:
        """Make every test cell's outputs say what the parent decided: an error output
        for a test that did not prove it ran to its end or did not run at all."""
        for index, cell in enumerate(nb.cells):
            if not _is_test(cell):
                continue
            record = run.cells.get(index)
            wrapped = self.wrapped.get(index)
            if wrapped is not None and wrapped.payload:
                _scrub(cell, wrapped.payload)
            _guard_partial_credit(cell)
            if record is None:
                cell.outputs = [_error("NotRun", "the notebook stopped before this cell ran")]
            elif not record.proven and not any(o.output_type == "error" for o in cell.outputs):
                reply = record.reply or {}
                if reply.get("status") == "error":
                    ename, evalue = str(reply.get("ename", "Error")), str(reply.get("evalue", ""))
                elif run.stop is not None and run.stop.cell_index == index:
                    ename, evalue = "Stopped", "this cell did not finish"
                else:
                    ename, evalue = "TestNotCompleted", "the test did not run to its end"
                cell.outputs.append(_error(ename[:200], evalue[:500]))


def _guard_partial_credit(cell: NotebookNode) -> None:
    """nbgrader reads partial credit from a test cell's displayed value and stops the
    whole autograde when that value lacks text/plain or exceeds the cell's points; the
    displayed value comes from the kernel, so such a cell scores 0 here instead."""
    points = float(cell.metadata.get("nbgrader", {}).get("points", 0) or 0)
    for position, output in enumerate(cell.outputs):
        if output.output_type == "error" or (
            output.output_type == "stream" and output.name == "stderr"
        ):
            return  # determine_grade stops at the first error: 0 points already
        if output.output_type != "execute_result":
            continue
        text = output.get("data", {}).get("text/plain")
        try:
            bad = not text or float(text if isinstance(text, str) else text[0]) > points
        except (TypeError, ValueError, IndexError):
            bad = False  # not a number: nbgrader gives full points, as for no value
        if bad:
            cell.outputs.insert(
                position, _error("InvalidPartialCredit", "the test's value is not a valid score")
            )
        return


def _error(ename: str, evalue: str) -> NotebookNode:
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def _scrub(cell: NotebookNode, payload: str) -> None:
    """Drop the loader's frame and base64 payload from tracebacks (noise, and the payload
    holds the proof): the student reads their cell's frames, never our one-line wrapper."""
    for output in cell.outputs:
        if output.output_type == "error":
            output.traceback = [
                frame.replace(payload, "...")
                for frame in output.traceback
                if _LOADER_MARK not in _ANSI.sub("", frame)
            ]


def _visible_text(cell: NotebookNode, cap: int) -> str:
    parts: list[str] = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(str(output.data.get("text/plain", "")) + "\n")
        elif output.output_type == "error":
            frames = "\n".join(_ANSI.sub("", frame) for frame in output.traceback)
            parts.append(frames or f"{output.ename}: {output.evalue}")
    text = "".join(parts)
    if len(text) > cap:
        text = text[:cap] + f"\n[... {len(text) - cap} more characters not shown]"
    return text


def _cell_reports(
    spec: NotebookExerciseSpec,
    nb: NotebookNode,
    run: runner.RunResult | None,
    grades: nbgrader_steps.NotebookGrades,
) -> list[CellReport]:
    by_id = {_grade_id(cell): (index, cell) for index, cell in enumerate(nb.cells)}
    infos = {info.grade_id: info for info in spec.cells}
    ran = set(run.cells) if run is not None else set()
    hidden_ran = [
        index
        for grade_id, (index, _) in by_id.items()
        if grade_id in infos and infos[grade_id].hidden_tests and index in ran
    ]
    first_hidden_run = min(hidden_ran, default=None)
    reports = []
    for info in spec.cells:
        index, cell = by_id.get(info.grade_id, (None, None))
        grade = grades.cells.get(info.grade_id)
        score = grade.score if grade is not None else 0.0
        needs_manual = (
            grade.needs_manual_grade if grade is not None else info.kind != "autograded_test"
        )
        entry: CellReport = {
            "grade_id": info.grade_id,
            "kind": info.kind,
            "score": round(score, 3),
            "max_score": info.max_score,
            "needs_manual_grade": needs_manual,
            "hidden_tests": info.hidden_tests,
            "passed": None,
            "output": None,
        }
        if info.kind == "autograded_test":
            cell_ran = index is not None and index in ran
            passed = grade is not None and grade.auto_score is not None and score >= info.max_score
            entry["passed"] = passed if cell_ran else False
            verdict = "passed" if passed else "failed"
            if not cell_ran or cell is None or index is None:
                entry["output"] = "not run: the notebook stopped before this cell"
            elif info.hidden_tests:
                entry["output"] = verdict
            elif first_hidden_run is not None and index > first_hidden_run:
                entry["output"] = (
                    f"{verdict} (details withheld: this cell ran after a cell with hidden tests)"
                )
            else:
                text = _visible_text(cell, spec.limits.output_kb * 1024)
                dropped = run.cells[index].dropped_bytes if run is not None else 0
                if dropped:
                    text += f"\n[... {dropped} more bytes of output not kept]"
                entry["output"] = text or verdict
        reports.append(entry)
    return reports


def _stop_message(
    spec: NotebookExerciseSpec, nb: NotebookNode, stop: runner.Stop
) -> tuple[Verdict, str]:
    cell = nb.cells[stop.cell_index]
    grade_id = _grade_id(cell)
    where = f"cell {stop.cell_index + 1}" + (f" ('{grade_id}')" if grade_id else "")
    kept = "Scores of the cells that ran before it are kept; the cells after it were not run."
    if stop.reason == "timeout":
        if stop.detail == "cell":
            limit = f"the {spec.limits.cell_s:g} s limit per cell"
        else:
            limit = f"the {spec.limits.total_s:g} s limit for the whole notebook"
        return "timeout", (
            f"{where.capitalize()} did not finish within {limit}. Look for endless loops or "
            f"very slow code. {kept}"
        )
    if stop.reason == "flood":
        return "error", (
            f"{where.capitalize()} printed more than {spec.limits.flood_kb} KiB of output, "
            f"so the run was stopped (an endless loop that prints?). {kept}"
        )
    return "error", (
        f"The Python kernel died while running {where}: {stop.detail}. Do not call "
        f"os._exit() or exit the kernel, and keep memory use small. {kept}"
    )


def grade_notebook(
    spec_or_source: NotebookExerciseSpec | str | Path,
    submission: bytes | str,
    *,
    slot: int = 0,
    include_notebook: bool = False,
) -> Report:
    """Autograde ``submission`` (the .ipynb bytes or text).

    ``spec_or_source`` is a loaded spec, an exercise folder, or a bare source .ipynb.
    Never raises for anything the student did (SpecError: the exercise is malformed;
    GraderError: the grader broke). With ``include_notebook`` the executed notebook is
    added as ``graded_notebook`` (JSON text, hidden tests included: staff only).
    """
    import nbformat

    began = time.monotonic()
    spec = _resolve(spec_or_source)
    nb, problem = parse_submission(submission, spec.limits.submission_kb * 1024)
    if nb is None:
        return _report(spec, "rejected", problem, timings={"total_s": time.monotonic() - began})
    release = nbformat.reads(spec.release.decode("utf-8"), as_version=4)
    source = nbformat.read(spec.source_path, as_version=4)
    infos = {info.grade_id: info for info in spec.cells}
    timings: dict[str, float | None] = {}
    with nbgrader_steps.throwaway_gradebook(spec.notebook_id) as book:
        nbgrader_steps.generate(source, book)
        try:
            restored = nbgrader_steps.restore(nb, release, book)
        except Exception as exc:  # nbgrader's own checks on cell metadata the student edited
            return _report(
                spec,
                "rejected",
                "The grading metadata of your notebook's cells does not match the assignment "
                f"({type(exc).__name__}). Copy your answers into a fresh copy of the released "
                "notebook and resubmit.",
                timings={"total_s": time.monotonic() - began},
            )
        judge = _Judge(infos)
        run = _execute(spec, restored, judge, slot, timings)
        judge.settle(restored, run)
        try:
            grades = nbgrader_steps.score(restored, book)
        except Exception as exc:  # settle() removed what we know makes nbgrader stop
            raise GraderError(f"nbgrader could not score the notebook: {exc!r}") from exc

    cells = _cell_reports(spec, restored, run, grades)
    tests = [c for c in cells if c["kind"] == "autograded_test"]
    passed = sum(1 for c in tests if c["passed"])
    manual = sum(1 for c in cells if c["needs_manual_grade"])
    if run.stop is not None:
        verdict, message = _stop_message(spec, restored, run.stop)
    else:
        verdict = "correct" if passed == len(tests) else "wrong"
        message = f"{passed} of {len(tests)} autograded test cells passed."
    if manual:
        message += f" {manual} answer(s) will be graded by a person."
    timings["total_s"] = time.monotonic() - began
    report = _report(
        spec,
        verdict,
        message,
        score=grades.score,
        needs_manual_grade=grades.needs_manual_grade,
        cells=cells,
        timings=timings,
    )
    if include_notebook:
        report["graded_notebook"] = json.dumps(restored)
    return report


def _execute(
    spec: NotebookExerciseSpec,
    nb: NotebookNode,
    judge: _Judge,
    slot: int,
    timings: dict[str, float | None],
) -> runner.RunResult:
    limits = spec.limits
    uid = sandbox.slot_uid(slot) if sandbox.mode() == "root" else None
    with sandbox.Scratch(uid) as scratch:
        started = time.monotonic()
        kernel = kernel_mod.start_kernel(
            scratch,
            slot=slot,
            limits=kernel_mod.KernelLimits(
                cpu_s=int(limits.total_s + _STARTUP_S + 10),
                memory_mb=limits.memory_mb,
                startup_s=_STARTUP_S,
            ),
        )
        timings["sandbox_start_s"] = time.monotonic() - started
        try:
            run = runner.run_cells(
                nb,
                kernel,
                runner.RunLimits(
                    cell_s=limits.cell_s,
                    total_s=limits.total_s,
                    keep_bytes=limits.output_kb * 1024,
                    flood_bytes=limits.flood_kb * 1024,
                ),
                judge.wrap,
                started,
            )
        finally:
            kernel.close()
        timings["run_s"] = run.elapsed_s
    return run
