"""A submission as text for the terminal: verdict, score, bandwidth against the measured peak,
the profile of one call, and the feedback (what the figures say and the next step).

Reads the API's submission object (GET /api/v1/submissions/<id>) and its report, in the shape
of graders/report/report.schema.json; any field may be missing or null in an old report.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping
from typing import Any

from courseware.client import units

STATUS_TEXT = {
    "queued": "queued, waiting for a grader",
    "running": "being graded",
    "graded": "graded",
    "needs_review": "graded by the machine; a TA will look at it before the score is final",
    "failed": "the grader failed on our side; this cost you nothing: submit again",
}
LABEL_WIDTH = 11


def text_width() -> int:
    return max(40, min(100, shutil.get_terminal_size((100, 24)).columns))


def field(label: str, value: str) -> str:
    """`Label      value`, continuation lines indented under the value."""
    indent = " " * (LABEL_WIDTH + 1)
    lines = value.splitlines() or [""]
    return "\n".join([f"{label:<{LABEL_WIDTH}} {lines[0]}", *(indent + line for line in lines[1:])])


def wrapped_field(label: str, text: str) -> str:
    """A long value (the grader's message) wrapped to the terminal under its label."""
    indent = " " * (LABEL_WIDTH + 1)
    paragraphs = [line for line in text.strip().splitlines() if line.strip()] or [""]
    return "\n".join(
        wrapped(line, first=f"{label:<{LABEL_WIDTH}} " if n == 0 else indent, indent=indent)
        for n, line in enumerate(paragraphs)
    )


def wrapped(text: str, *, indent: str = "  ", first: str | None = None) -> str:
    return textwrap.fill(
        text,
        width=text_width(),
        initial_indent=first if first is not None else indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )


def status_line(data: Mapping[str, Any]) -> str:
    status = str(data.get("status") or "")
    return STATUS_TEXT.get(status, status or "unknown")


def score_text(data: Mapping[str, Any]) -> str:
    score = units.points(data.get("score"))
    text = f"{score} / {units.points(data.get('max_score'))}"
    notes = []
    if data.get("is_late"):
        notes.append("late: the late penalty is taken off")
    if data.get("overridden"):
        notes.append("set by a person")
    return f"{text} ({'; '.join(notes)})" if notes else text


def performance_lines(perf: Mapping[str, Any]) -> list[str]:
    lines = []
    if perf.get("achieved_gbps") is not None:
        speed = units.bandwidth(perf["achieved_gbps"])
        if perf.get("peak_gbps"):
            speed += (
                f", {units.percent(perf.get('fraction_of_peak'))} of the measured peak "
                f"({units.bandwidth(perf['peak_gbps'])})"
            )
        lines.append(field("Bandwidth", speed))
    if perf.get("achieved_flops_per_s") is not None:
        compute = units.si(perf["achieved_flops_per_s"], "FLOP/s")
        if perf.get("fraction_of_peak_flops") is not None:
            compute += f", {units.percent(perf['fraction_of_peak_flops'])} of the measured peak"
        lines.append(field("Compute", compute))
    if perf.get("median_s") is not None:
        runs = f" over {perf['runs']} timed calls" if perf.get("runs") else ""
        lines.append(field("Time", f"{units.duration(perf['median_s'])} per call (median{runs})"))
    if perf.get("roof"):
        share = units.percent(perf.get("fraction_of_roofline"))
        lines.append(field("Roofline", f"{perf['roof']}-bound; {share} of the roof"))
    ratios = []
    if perf.get("speedup_vs_naive") is not None:
        ratios.append(f"{units.ratio(perf['speedup_vs_naive'])} the naive version")
    if perf.get("relative_to_reference") is not None:
        ratios.append(f"{units.ratio(perf['relative_to_reference'])} the reference")
    if ratios:
        lines.append(field("Speed", ", ".join(ratios)))
    return lines


def correctness_lines(correctness: Mapping[str, Any]) -> list[str]:
    lines = []
    if correctness.get("mismatch_fraction") is not None:
        lines.append(
            field("Wrong", f"{units.percent(correctness['mismatch_fraction'])} of the values")
        )
    first = correctness.get("first_mismatch")
    if isinstance(first, Mapping):
        index = ", ".join(str(i) for i in first.get("index") or [])
        lines.append(
            field(
                "First",
                f"at index ({index}): got {first.get('got')}, expected {first.get('expected')}",
            )
        )
    return lines


def profile_table(profile: object) -> str:
    rows = [row for row in profile or [] if isinstance(row, Mapping)]  # type: ignore[attr-defined]
    if not rows:
        return ""
    total = sum(units.number(row.get("self_time_s")) or 0.0 for row in rows)
    body = [
        [
            str(row.get("name", "")),
            str(row.get("calls", "")),
            units.duration(row.get("self_time_s")),
            units.percent((units.number(row.get("self_time_s")) or 0.0) / total)
            if total
            else units.NONE,
        ]
        for row in rows
    ]
    table = units.table(["Operator", "Calls", "Self time", "Share"], body, right={1, 2, 3})
    return "Profile of one call\n" + textwrap.indent(table, "  ")


def cells_table(cells: object) -> str:
    rows = [cell for cell in cells or [] if isinstance(cell, Mapping)]  # type: ignore[attr-defined]
    if not rows:
        return ""
    body = []
    for cell in rows:
        if cell.get("needs_manual_grade") and not cell.get("graded_by_person"):
            result = "waiting for a person"
        elif cell.get("passed") is None:
            result = ""
        else:
            result = "passed" if cell.get("passed") else "failed"
        score = f"{units.points(cell.get('score'))} / {units.points(cell.get('max_score'))}"
        body.append([str(cell.get("grade_id", "")), score, result])
    table = units.table(["Cell", "Score", "Result"], body, right={1})
    return "Cells\n" + textwrap.indent(table, "  ")


def feedback_text(feedback: object) -> str:
    if not isinstance(feedback, Mapping):
        return ""
    parts = [
        wrapped(str(finding), first="  - ", indent="    ")
        for finding in feedback.get("findings") or []
    ]
    if feedback.get("next_step"):
        parts.append(wrapped(str(feedback["next_step"])))
    return "Feedback\n" + "\n".join(parts) if parts else ""


def report_text(data: Mapping[str, Any]) -> str:
    """The whole report of one submission, as `report` and `submit` print it."""
    report = data.get("report") if isinstance(data.get("report"), Mapping) else None
    head = [f"Submission {data.get('id')} · {data.get('exercise')} · {status_line(data)}"]
    if data.get("verdict"):
        head.append(field("Verdict", str(data["verdict"])))
    if data.get("score") is not None:
        head.append(field("Score", score_text(data)))
    sections = ["\n".join(head)]
    if report is not None:
        sections.extend(_report_sections(report))
    sections.append(feedback_text(data.get("feedback")))
    if data.get("url"):
        sections.append(f"Report page: {data['url']}")
    return "\n\n".join(section for section in sections if section)


def _report_sections(report: Mapping[str, Any]) -> list[str]:
    details: list[str] = []
    if isinstance(report.get("performance"), Mapping):
        details += performance_lines(report["performance"])
    hardware = report.get("hardware_bytes")
    if isinstance(hardware, Mapping) and hardware.get("message"):
        details.append(wrapped_field("DRAM bytes", str(hardware["message"])))
    correctness = report.get("correctness")
    if isinstance(correctness, Mapping) and not correctness.get("passed", True):
        details += correctness_lines(correctness)
    device = report.get("device")
    if isinstance(device, Mapping) and (device.get("name") or device.get("kind")):
        names = [str(device[key]) for key in ("name", "kind") if device.get(key)]
        details.append(field("Device", f"{names[0]} ({names[1]})" if len(names) == 2 else names[0]))
    if report.get("flags"):
        details.append(field("Flags", ", ".join(str(f) for f in report["flags"])))
    sections = ["\n".join(details)]
    if report.get("message"):
        sections.append(wrapped_field("Message", str(report["message"])))
    profile = profile_table(report.get("profile"))
    if not profile and report.get("kind") == "code" and report.get("verdict") == "correct":
        # The grade is stored first; the profile follows a second or two later.
        profile = "Profile of one call: still being taken; `report` shows it in a moment."
    sections.append(profile)
    sections.append(cells_table(report.get("cells")))
    return sections
