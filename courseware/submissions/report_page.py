"""What the submission page shows, read from a Submission: the view model of its report.

Everything here is a read. The score comes from selectors.submission_effective_score; the
breakdown shown beside it (correctness, performance, late penalty, override) is computed from
the same rows and always adds up to that score. Figures are formatted in units a person reads
(readable_units), the chart is drawn by roofline_chart, the advice written by feedback.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import User
from django.urls import NoReverseMatch, reverse
from django.utils.translation import get_language, ngettext
from django.utils.translation import gettext as _

from courseware.courses.selectors import user_is_staff_of
from courseware.submissions import readable_units as units
from courseware.submissions import selectors
from courseware.submissions.feedback import Feedback, feedback_for
from courseware.submissions.forbidden_note import forbidden_message
from courseware.submissions.ladder_view import LadderView, report_ladder
from courseware.submissions.load_view import LoadView, load_view_for
from courseware.submissions.models import (
    PENDING_STATUSES,
    Grading,
    Override,
    Status,
    Submission,
    Verdict,
)
from courseware.submissions.notebook_review import ReviewCell, review_cells_for
from courseware.submissions.roofline_chart import RooflineChart, chart_from_report
from courseware.submissions.score_trail import TrailEntry, score_trail
from courseware.submissions.tracebacks import clean_traceback
from graders import SpecError, load_exercise
from graders.report.build import FLAG_REASONS

_THOUSANDTH = Decimal("0.001")


@dataclass(frozen=True)
class Row:
    label: str
    value: str
    detail: str = ""


@dataclass(frozen=True)
class ScoreRow:
    label: str
    points: Decimal
    detail: str = ""


@dataclass(frozen=True)
class OverrideShown:
    author: str
    created_at: Any
    comment: str
    score: Decimal


@dataclass
class ScoreBreakdown:
    rows: list[ScoreRow]
    total: Decimal
    max_score: Decimal
    override: OverrideShown | None = None


@dataclass(frozen=True)
class HistoryRow:
    submission: Submission
    status: str
    verdict: str
    score: Decimal | None
    is_this_one: bool


@dataclass
class ReportPage:
    submission: Submission
    status_text: str
    pending: bool
    verdict: str | None  # translated
    verdict_code: str | None
    message: str | None
    report: dict[str, Any] | None
    breakdown: ScoreBreakdown | None
    correctness: list[Row] = field(default_factory=list)
    flags: list[Row] = field(default_factory=list)
    measurement: list[Row] = field(default_factory=list)
    performance: list[Row] = field(default_factory=list)
    roof: str = ""
    chart: RooflineChart | None = None
    ladder: LadderView | None = None  # naive, reference and this submission on one axis
    load: LoadView | None = None  # how busy the machine was, and provisional points
    roofline_url: str = ""
    profile: list[Row] = field(default_factory=list)
    profile_pending: bool = False  # left for later while others waited (profiles_later.py)
    device: list[Row] = field(default_factory=list)
    feedback: Feedback | None = None
    traceback: str = ""
    companion_errors: list[Row] = field(default_factory=list)
    # The engine's notes (report["notes"]) that its message does not already say.
    notes: list[str] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)
    history: list[HistoryRow] = field(default_factory=list)
    report_json: str = ""
    # Staff: each hand-graded notebook cell with the answer, rubric and score form.
    review_cells: list[ReviewCell] = field(default_factory=list)
    # Every grading, hand grade and override (staff), or those a person made (the student).
    trail: list[TrailEntry] = field(default_factory=list)
    # Every status's words, for the script that polls while the grading is pending.
    status_labels: dict[str, str] = field(
        default_factory=lambda: {str(value): str(label) for value, label in Status.choices}
    )


def verdict_label(code: str | None) -> str | None:
    if code is None:
        return None
    try:
        return str(Verdict(code).label)
    except ValueError:
        return code


def roof_label(roof: str | None) -> str:
    if roof == "memory":
        return _("bound by memory")
    if roof == "compute":
        return _("bound by compute")
    return ""


def flag_reason(flag: str) -> str:
    """The student's words for a flag; the engine's English for one this page does not know."""
    reasons = {
        "implausible_speed": _("the measured time is faster than the hardware allows"),
        "second_core": _("your code used more CPU time than wall time, so more than one core"),
        "cpu_outside_calls": _("your code ran while it should have been stopped between calls"),
        "timing_inconsistent": _(
            "the time measured inside your process was far below what the grader's outside "
            "clock saw"
        ),
        "grader_error": _("the grader itself failed; this costs you nothing"),
    }
    return reasons.get(flag) or FLAG_REASONS.get(flag, flag)


def _person(user: User) -> str:
    return user.get_full_name() or user.get_username()


def score_breakdown(submission: Submission, grading: Grading | None) -> ScoreBreakdown | None:
    """The parts of the effective score; they add up to submission_effective_score's total."""
    total = selectors.submission_effective_score(submission, grading)
    if total is None:
        return None
    rows: list[ScoreRow] = []
    graded = Decimal(0)
    if grading is not None:
        rows, graded = _graded_parts(submission, grading)
        factor = selectors.late_factor(submission)
        late = (graded * factor).quantize(_THOUSANDTH)
        if late != graded:
            rows.append(
                ScoreRow(
                    _("Late penalty"),
                    late - graded,
                    ngettext(
                        "%(days)d day late: %(kept)s of the points kept",
                        "%(days)d days late: %(kept)s of the points kept",
                        submission.late_days,
                    )
                    % {"days": submission.late_days, "kept": units.percent(float(factor))},
                )
            )
        graded = late
    shown: OverrideShown | None = None
    override: Override | None = submission.overrides.select_related("author").first()
    if override is not None:
        shown = OverrideShown(
            _person(override.author), override.created_at, override.comment, override.score
        )
        rows.append(
            ScoreRow(
                _("Adjusted by %(person)s") % {"person": shown.author},
                override.score - graded,
                override.comment,
            )
        )
    return ScoreBreakdown(rows, total, submission.item.max_score, shown)


def _graded_parts(submission: Submission, grading: Grading) -> tuple[list[ScoreRow], Decimal]:
    report = grading.report or {}
    if report.get("cells"):
        cells = selectors.notebook_cells(submission, grading)
        auto = sum(
            (Decimal(str(c.get("score") or 0)) for c in cells if not c.get("needs_manual_grade")),
            Decimal(0),
        )
        manual = sum(
            (Decimal(str(c.get("score") or 0)) for c in cells if c.get("needs_manual_grade")),
            Decimal(0),
        )
        return [
            ScoreRow(_("Autograded cells"), auto),
            ScoreRow(_("Hand-graded cells"), manual),
        ], auto + manual
    score = grading.score if grading.score is not None else Decimal(0)
    performance = report.get("performance") or {}
    perf_points = Decimal(str(performance.get("points") or 0)).quantize(_THOUSANDTH)
    detail = ""
    if performance.get("measure"):
        detail = _("measured by %(measure)s = %(value)s") % {
            "measure": measure_label(str(performance["measure"])),
            "value": _measure_value(str(performance["measure"]), performance.get("measure_value")),
        }
    return [
        ScoreRow(_("Correctness"), score - perf_points),
        ScoreRow(_("Performance"), perf_points, detail),
    ], score


def measure_label(measure: str) -> str:
    return {
        "fraction_of_peak_bandwidth": _("fraction of peak bandwidth"),
        "fraction_of_peak_flops": _("fraction of peak FLOP/s"),
        "fraction_of_roofline": _("fraction of the roofline"),
        "relative_to_reference": _("speed relative to the reference"),
        "speedup_vs_naive": _("speed-up over the naive version"),
    }.get(measure, measure)


def _measure_value(measure: str, value: Any) -> str:
    if not isinstance(value, int | float):
        return "—"
    return units.percent(value) if measure.startswith("fraction") else units.ratio(value)


def correctness_rows(correctness: dict[str, Any] | None) -> list[Row]:
    if not correctness:
        return []
    rows = [
        Row(_("Result"), _("passed") if correctness.get("passed") else _("failed")),
        Row(_("Sizes checked"), str(correctness.get("trials", "—"))),
    ]
    if correctness.get("timed_calls_verified") is not None:
        rows.append(
            Row(_("Timed calls whose output was checked"), str(correctness["timed_calls_verified"]))
        )
    if correctness.get("timed_calls_spot_checked") is not None:
        rows.append(
            Row(_("Timed calls spot-checked"), str(correctness["timed_calls_spot_checked"]))
        )
    if correctness.get("sampled_positions") is not None:
        rows.append(Row(_("Positions sampled in each"), str(correctness["sampled_positions"])))
    for key, label in (
        ("max_abs_err", _("Largest absolute error")),
        ("max_rel_err", _("Largest relative error")),
    ):
        value = correctness.get(key)
        if value is not None:
            rows.append(Row(label, _number(value)))
    if correctness.get("mismatch_fraction") is not None:
        rows.append(
            Row(_("Values outside the tolerance"), units.percent(correctness["mismatch_fraction"]))
        )
    first = correctness.get("first_mismatch")
    if isinstance(first, dict):
        rows.append(
            Row(
                _("First wrong value"),
                _("at (%(index)s): got %(got)s, expected %(expected)s")
                % {
                    "index": ", ".join(str(i) for i in first.get("index") or []),
                    "got": _number(first.get("got")),
                    "expected": _number(first.get("expected")),
                },
            )
        )
    return rows


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return units.significant(float(value), 4)


def measurement_rows(report: dict[str, Any]) -> list[Row]:
    """How the timing was taken: inside and outside clocks, disturbed runs, the limits in force."""
    perf = report.get("performance") or {}
    rows = []
    if perf.get("runs"):
        rows.append(
            Row(
                _("Timed calls"),
                str(perf["runs"]),
                _("spread (coefficient of variation) %(cv)s")
                % {"cv": units.percent(perf.get("cv"))},
            )
        )
    if perf.get("observed_s") is not None:
        rows.append(
            Row(_("Time seen by the grader's outside clock"), units.duration(perf["observed_s"]))
        )
    if perf.get("claimed_s") is not None:
        rows.append(
            Row(_("Time reported from inside the sandbox"), units.duration(perf["claimed_s"]))
        )
    if perf.get("disturbed_runs"):
        rows.append(
            Row(_("Calls disturbed by the machine and timed again"), str(perf["disturbed_runs"]))
        )
    rows += window_rows(perf)
    sandbox = (report.get("device") or {}).get("sandbox") or {}
    if sandbox:
        containment = sandbox.get("containment")
        rows.append(
            Row(
                _("Limits enforced"),
                {
                    "cgroup-v1": _(
                        "control group (v1): memory, processes and CPU of the whole sandbox"
                    ),
                    "cgroup-v2": _(
                        "control group (v2): memory, processes and CPU of the whole sandbox"
                    ),
                    "signals": _("process limits and signals (no control group on this machine)"),
                }.get(str(containment), _("per-process limits")),
                _("sandbox mode %(mode)s, CPU core %(core)s")
                % {"mode": sandbox.get("mode", "—"), "core": sandbox.get("core", "—")},
            )
        )
    rows += gpu_rows(sandbox.get("device") or {})
    return rows


def window_rows(perf: dict[str, Any]) -> list[Row]:
    """How each timed window was made: the calls it held and the empty window taken off it."""
    rows = []
    if (perf.get("calls_per_window") or 1) > 1:
        rows.append(
            Row(
                _("Calls in each timed window"),
                str(perf["calls_per_window"]),
                _("each on inputs of its own; a window's fixed cost is shared by its calls"),
            )
        )
    if perf.get("empty_window_s") is not None:
        rows.append(
            Row(
                _("Empty window taken off each window"),
                units.duration(perf["empty_window_s"]),
                _("measured before your code was imported"),
            )
        )
    return rows


def gpu_rows(device: dict[str, Any]) -> list[Row]:
    """What a GPU adds to the containment: how the end of its work is known, and whether its
    memory is watched (the engine's own sentences)."""
    labels = {
        "gpu_completion": _("End of the GPU work"),
        "gpu_memory": _("GPU memory of the sandbox"),
    }
    return [Row(label, str(device[key])) for key, label in labels.items() if device.get(key)]


def performance_rows(perf: dict[str, Any]) -> list[Row]:
    rows = [
        Row(
            _("Median time of one call"),
            units.duration(perf.get("median_s")),
            _("interquartile range %(iqr)s") % {"iqr": units.duration(perf.get("iqr_s"))},
        ),
        Row(_("Bytes the exercise moves"), units.data_size(perf.get("bytes"))),
    ]
    if perf.get("achieved_gbps") is not None:
        rows.append(
            Row(
                _("Achieved bandwidth"),
                units.bandwidth(perf["achieved_gbps"]),
                _("%(share)s of the measured peak %(peak)s")
                % {
                    "share": units.percent(perf.get("fraction_of_peak")),
                    "peak": units.bandwidth(perf.get("peak_gbps")),
                }
                if perf.get("peak_gbps")
                else "",
            )
        )
    if perf.get("achieved_flops_per_s") is not None:
        rows.append(
            Row(
                _("Achieved FLOP/s"),
                units.si(perf["achieved_flops_per_s"], "FLOP/s"),
                _("%(share)s of the measured compute peak")
                % {"share": units.percent(perf["fraction_of_peak_flops"])}
                if perf.get("fraction_of_peak_flops") is not None
                else "",
            )
        )
    rows.append(
        Row(
            _("Arithmetic intensity"),
            units.intensity(perf.get("arithmetic_intensity")),
            roof_label(perf.get("roof")),
        )
    )
    if perf.get("fraction_of_roofline") is not None:
        rows.append(Row(_("Fraction of the roofline"), units.percent(perf["fraction_of_roofline"])))
    if perf.get("speedup_vs_naive") is not None:
        rows.append(
            Row(
                _("Speed-up over the naive version"),
                units.ratio(perf["speedup_vs_naive"]),
                _("naive version: %(time)s") % {"time": units.duration(perf.get("naive_median_s"))},
            )
        )
    if perf.get("relative_to_reference") is not None:
        rows.append(
            Row(
                _("Speed relative to the reference"),
                units.ratio(perf["relative_to_reference"]),
                _("reference: %(time)s") % {"time": units.duration(perf.get("reference_median_s"))},
            )
        )
    return rows


def hardware_bytes_row(hardware: dict[str, Any]) -> Row:
    """The DRAM bytes the GPU's counters saw (graders/measure/hardware_bytes.py): the ratio to
    the exercise's minimum, and the engine's sentence saying what it means."""
    if not hardware.get("measured"):
        value = _("not measured")
    elif hardware.get("ratio_to_minimum") is not None:
        value = _("%(ratio)s the minimum") % {"ratio": units.ratio(hardware["ratio_to_minimum"])}
    else:
        value = units.data_size(hardware.get("total_bytes"))
    return Row(_("DRAM bytes counted by the GPU"), value, str(hardware.get("message") or ""))


def profile_rows(profile: list[dict[str, Any]] | None) -> list[Row]:
    return [
        Row(
            str(row.get("name", "")),
            str(row.get("calls", "")),
            units.duration(row.get("self_time_s")),
        )
        for row in profile or []
        if isinstance(row, dict)
    ]


def device_rows(report: dict[str, Any]) -> list[Row]:
    device, peak = report.get("device") or {}, report.get("peak") or {}
    rows = [
        Row(_("Device"), device.get("name") or _("unknown"), str(device.get("kind") or "").upper())
    ]
    if peak.get("gbps"):
        rows.append(
            Row(
                _("Measured peak bandwidth"),
                units.bandwidth(peak["gbps"]),
                _("datasheet: %(gbps)s") % {"gbps": units.bandwidth(peak["datasheet_gbps"])}
                if peak.get("datasheet_gbps")
                else "",
            )
        )
    if peak.get("flops_per_s"):
        rows.append(Row(_("Measured compute peak"), units.si(peak["flops_per_s"], "FLOP/s")))
    if peak.get("method"):
        rows.append(Row(_("How the peaks were measured"), str(peak["method"])))
    return rows


def roofline_url(report: dict[str, Any]) -> str:
    """The interactive roofline page, placed at this device and this intensity."""
    try:
        base = reverse("roofline")
    except NoReverseMatch:  # the page is optional: a report renders without it
        return ""
    query: dict[str, str] = {}
    name = (report.get("device") or {}).get("name")
    if name:
        query["device"] = str(name)
    intensity = (report.get("performance") or {}).get("arithmetic_intensity")
    if isinstance(intensity, int | float):
        query["ai"] = f"{intensity:.6g}"
    return f"{base}?{urlencode(query)}" if query else base


def source_is_naive(submission: Submission) -> bool:
    """Whether the code is the exercise's naive.py unchanged (whitespace aside)."""
    if submission.kind != "code":
        return False
    try:
        spec = load_exercise(settings.GRADERS_EXERCISES_ROOT / submission.item.source_path)
    except (SpecError, OSError):
        return False
    path = spec.naive_path
    if path is None:
        return False
    return _normalized(path.read_text(encoding="utf-8")) == _normalized(submission.source)


def _normalized(source: str) -> list[str]:
    return [line.rstrip() for line in source.strip().splitlines() if line.strip()]


def history_for(*, viewer: User, submission: Submission) -> list[HistoryRow]:
    """The author's submissions for this exercise that the viewer may see, newest first."""
    qs = selectors.submissions_with_scores(
        selectors.submission_list_for(user=submission.user, item_id=submission.item_id)
    )
    penalties = selectors.LatePenalties()
    staff_of: dict[int | None, bool] = {}
    rows = []
    for other in qs[:50]:
        if other.user_id != viewer.pk:
            if other.offering_id not in staff_of:
                staff_of[other.offering_id] = user_is_staff_of(user=viewer, offering=other.offering)
            if not staff_of[other.offering_id]:
                continue
        grading = other.current_grading
        finished = other.status not in PENDING_STATUSES
        rows.append(
            HistoryRow(
                submission=other,
                status=str(other.get_status_display()),
                verdict=verdict_label(grading.verdict if grading and finished else None) or "",
                score=selectors.submission_effective_score(other, grading, penalties=penalties)
                if finished
                else None,
                is_this_one=other.pk == submission.pk,
            )
        )
    return rows


def report_page(*, submission: Submission, viewer: User, is_staff: bool) -> ReportPage:
    data = selectors.submission_as_api(submission, for_staff=is_staff)
    report: dict[str, Any] | None = data["report"]
    grading = submission.current_grading
    finished = submission.status in (Status.GRADED, Status.NEEDS_REVIEW, Status.FAILED)
    page = ReportPage(
        submission=submission,
        status_text=str(submission.get_status_display()),
        pending=submission.status in PENDING_STATUSES,
        verdict=verdict_label(data["verdict"]),
        verdict_code=data["verdict"],
        message=forbidden_message(report) or (report.get("message") if report else None),
        report=report,
        breakdown=score_breakdown(submission, grading) if finished else None,
        history=history_for(viewer=viewer, submission=submission),
        trail=score_trail(submission, for_staff=is_staff),
    )
    if is_staff and finished:
        page.review_cells = review_cells_for(submission, grading, language=get_language())
    if report is None:
        return page
    perf = report.get("performance") or {}
    page.correctness = correctness_rows(report.get("correctness"))
    page.flags = [
        Row(str(flag), flag_reason(str(flag))) for flag in report.get("flags") or [] if flag
    ]
    page.measurement = measurement_rows(report)
    page.performance = performance_rows(perf) if perf else []
    if page.performance and isinstance(report.get("hardware_bytes"), dict):
        page.performance.append(hardware_bytes_row(report["hardware_bytes"]))
    page.roof = roof_label(perf.get("roof"))
    page.chart = chart_from_report(report)
    page.ladder = report_ladder(report)
    page.load = load_view_for(report, grading)
    page.roofline_url = roofline_url(report)
    page.profile = profile_rows(report.get("profile"))
    page.profile_pending = bool(grading is not None and grading.profile_pending)
    page.device = device_rows(report)
    page.feedback = feedback_for(report, is_naive_source=source_is_naive(submission))
    page.traceback = clean_traceback(report.get("traceback"))
    page.companion_errors = [
        Row(str(name), str(reason))
        for name, reason in (report.get("companion_errors") or {}).items()
    ]
    page.notes = [
        str(note) for note in report.get("notes") or [] if str(note) not in (page.message or "")
    ]
    page.cells = [
        {**cell, "output": clean_traceback(cell.get("output")) if cell.get("output") else None}
        for cell in report.get("cells") or []
    ]
    page.report_json = json.dumps(report, indent=2, ensure_ascii=False)
    return page


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "added", "removed", "context" or "hunk"
    text: str


def source_diff(older: Submission, newer: Submission) -> list[DiffLine]:
    """A unified diff of two submissions' sources, line by line (escaped by the template)."""
    lines = difflib.unified_diff(
        older.source.splitlines(),
        newer.source.splitlines(),
        fromfile=_("submission %(id)s") % {"id": older.pk},
        tofile=_("submission %(id)s") % {"id": newer.pk},
        lineterm="",
    )
    shown = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "added"
        elif line.startswith("-"):
            kind = "removed"
        else:
            kind = "context"
        shown.append(DiffLine(kind, line))
    return shown
