"""The types of a grading report: what the engine returns and what the site stores and renders.

These TypedDicts are the one description of a report. ``report.schema.json`` is generated from
them (``python -m graders.report.schema``) and a test checks the committed file is current, so
the JSON schema that outside tools read can never drift from what the code builds.

One envelope serves every kind of exercise, so the site renders any report the same way:
code exercises fill ``correctness``/``performance``/``peak``/``profile``; notebook exercises
set ``kind = "notebook"`` and fill ``cells``; a grader failure (the machinery broke, not the
student) has ``verdict = None``, ``gradable = False`` and, for staff, ``internal_error``.

``Annotated[..., Minimum(0)]`` carries the one numeric constraint the schema states.
"""

from dataclasses import dataclass
from typing import Annotated, Literal, NotRequired, TypedDict

from graders.report.roofline import Figures

Verdict = Literal["correct", "wrong", "error", "timeout", "rejected"]
VERDICTS: tuple[Verdict, ...] = ("correct", "wrong", "error", "timeout", "rejected")


@dataclass(frozen=True)
class Minimum:
    """A lower bound for a number in the generated schema."""

    value: float


NonNegative = Annotated[float, Minimum(0)]
Count = Annotated[int, Minimum(0)]
# Non-finite floats are stored as the strings "nan", "inf" (PostgreSQL's jsonb has no NaN).
FloatOrText = float | str


class Mismatch(TypedDict):
    index: list[int]
    got: FloatOrText
    expected: FloatOrText


class Correctness(TypedDict):
    passed: bool
    trials: Count
    max_abs_err: FloatOrText | None
    max_rel_err: FloatOrText | None
    mismatch_fraction: NonNegative | None
    first_mismatch: Mismatch | None
    timed_calls_verified: NotRequired[Count]  # timed calls whose output was checked in full
    # Timed calls spot-checked (a secret sample of their output and inputs), and how many
    # values each sample held.
    timed_calls_spot_checked: NotRequired[Count]
    sampled_positions: NotRequired[Count]


class Performance(Figures):
    """The timed figures: where the median call lands on the roofline (Figures), and more."""

    median_s: NonNegative
    iqr_s: NonNegative
    cv: NonNegative
    runs: Annotated[int, Minimum(1)]
    sizes: dict[str, int]
    speedup_vs_naive: float | None
    relative_to_reference: float | None
    reference_median_s: float | None
    naive_median_s: float | None
    disturbed_runs: Count | None
    claimed_s: float | None
    observed_s: float | None
    # Companions whose median was reused from an earlier grading on this slot (checked by
    # interleaved calls, graders/measure/companion_times.py): name -> the median's age in seconds.
    companions_reused: NotRequired[dict[str, float]]
    # How each timed window was made (absent in reports from before devices had a say): the
    # calls it held, each on inputs of its own (several on a GPU, for short kernels), and the
    # empty window subtracted from it, measured before the submission was imported, and the
    # interquartile range of those empty windows: what of the fixed cost a figure still holds.
    calls_per_window: NotRequired[Annotated[int, Minimum(1)]]
    empty_window_s: NotRequired[NonNegative]
    empty_window_spread_s: NotRequired[NonNegative]
    # Added when the score is computed (a correct verdict only).
    points: NotRequired[NonNegative]
    measure: NotRequired[str | None]
    measure_value: NotRequired[float | None]


class LoadReport(TypedDict):
    """How busy the machine was while the submission was timed, and what was done about it
    (graders/measure/load.py)."""

    # The memory-bus canary's readings, each a share of the quiet bandwidth (the calibrated
    # one, or the best the canary read on this worker's bench if higher; before and
    # after the timed phase); None where there is no canary (a GPU, no companion).
    bus_canary: list[NonNegative] | None
    stalled_calls_retaken: Count  # the submission's calls kept off their core, timed again
    stalled_calls_kept: Count  # ... and scored anyway (the phase's patience ran out)
    detected: list[str]  # each disturbance, in the student's words
    # none: nothing disturbed; remeasured: timed again (disturbed calls, or the whole phase);
    # ratio: scored from the ratio to a companion timed in the same rounds, which the load
    # cancels; provisional: still disturbed after a second timing.
    action: Literal["none", "remeasured", "ratio", "provisional"]
    measured_twice: bool
    provisional: bool
    explanation: str | None  # what was seen and done, for the student (English)


LadderRungName = Literal["naive", "reference", "submission"]


class LadderRung(TypedDict):
    name: LadderRungName
    value: float  # on the axis of the scoring curve (``Ladder.measure``)
    points: NonNegative  # the performance points that figure earns on the curve


class Ladder(TypedDict):
    """The naive version, the reference and the submission on the scoring curve's axis, each
    with its points (graders/report/ladder.py); rungs that were not timed are left out."""

    measure: str
    full_at: float
    zero_at: NonNegative
    performance_points: NonNegative
    rungs: list[LadderRung]


class Peak(TypedDict):
    gbps: float | None
    flops_per_s: float | None
    method: str | None
    datasheet_gbps: float | None


class ProfileRow(TypedDict):
    name: str
    calls: Count
    self_time_s: NonNegative


class HardwareBytes(TypedDict):
    """The DRAM bytes the GPU's counters saw the kernels move in one untimed profiling run
    (Nsight Compute; graders/measure/hardware_bytes.py), against the exercise's ideal."""

    measured: bool  # False: ncu could not count here, and ``message`` says why
    message: str  # one sentence for the student
    total_bytes: NonNegative | None
    read_bytes: NonNegative | None
    write_bytes: NonNegative | None
    minimum_bytes: NonNegative | None  # the analytic minimum for the calls profiled
    ratio_to_minimum: NonNegative | None
    kernels: Count  # kernel launches counted


ContainmentKind = Literal["cgroup-v1", "cgroup-v2", "signals"]


class SandboxInfo(TypedDict):
    mode: Literal["root", "user", "none"]
    core: int | None
    slot: Count
    # Which way the sandbox's tree was frozen and bounded (graders/sandbox/containment.py);
    # absent in reports written before the trusted side owned the clock.
    containment: NotRequired[ContainmentKind]
    # What the device adds (graders/devices/): on a GPU, how the end of the sandbox's GPU work
    # is known and whether its GPU memory is watched, each in a sentence.
    device: NotRequired[dict[str, str]]


class Device(TypedDict):
    kind: Literal["cpu", "cuda"]
    name: str | None
    sandbox: NotRequired[SandboxInfo | None]


class Timings(TypedDict):
    sandbox_start_s: float | None
    setup_s: float | None
    check_s: float | None
    timing_s: float | None
    total_s: float | None
    run_s: NotRequired[float | None]  # notebooks: all cells, kernel start excluded


CellKind = Literal["autograded_test", "manual", "task"]


class CellReport(TypedDict):
    grade_id: str
    kind: CellKind
    score: NonNegative
    max_score: NonNegative
    needs_manual_grade: bool
    hidden_tests: bool
    passed: bool | None
    output: str | None


class ForbiddenUse(TypedDict):
    """Operators the submission ran that its exercise's ``[rules] forbid`` names: the rules
    matched (e.g. "softmax") and the operators that matched them (e.g. "aten::_softmax")."""

    rules: list[str]
    operators: list[str]


class Report(TypedDict):
    exercise: str
    exercise_hash: str | None
    verdict: Verdict | None  # None only for a grader failure
    message: str | None
    gradable: bool
    score: NonNegative
    max_score: NonNegative
    flags: list[str]
    correctness: Correctness | None
    performance: Performance | None
    peak: Peak | None
    profile: list[ProfileRow] | None
    device: Device
    timings: Timings
    stderr: str | None
    stdout: str | None
    traceback: str | None
    # A companion (reference or naive version) that could not run: why, by name.
    companion_errors: NotRequired[dict[str, str]]
    # What a reader must know about how the submission was run, in the student's words, e.g.
    # that a Triton kernel ran under Triton's interpreter on a CPU worker, so its timing earned
    # no performance points. Absent when there is nothing to say.
    notes: NotRequired[list[str]]
    # How busy the machine was while the submission was timed (absent before it was
    # watched, and for gradings that timed nothing). ``provisional`` there marks points that
    # a grading on a quiet machine will replace.
    load: NotRequired[LoadReport]
    # DRAM bytes counted by the hardware, where the worker profiles with ncu; absent in
    # reports graded before it, or by workers that do not.
    hardware_bytes: NotRequired[HardwareBytes]
    # Where the submission stands between the naive version and the reference, timed in the
    # same grading (a correct, timed grading with a scoring curve; absent before issue 26).
    ladder: NotRequired[Ladder]
    # A correct submission that ran an operator the exercise forbids: correctness points
    # only: its figures stay, its performance points are 0 (graders/grading/forbidden_ops.py).
    # Absent otherwise.
    forbidden: NotRequired[ForbiddenUse]
    # Notebook exercises.
    kind: NotRequired[Literal["code", "notebook"]]
    needs_manual_grade: NotRequired[bool]
    cells: NotRequired[list[CellReport]]
    graded_notebook: NotRequired[str]  # the executed notebook, hidden tests included: staff only
    # Grader failures: the traceback, for staff only.
    internal_error: NotRequired[str]
