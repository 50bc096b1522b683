"""grade_code(): run one code submission through sandbox, checks and timing; build the report.

Reached through :func:`graders.grade`, the engine's one public entry point.

Flow (all checking and all timing happen here, in the trusted process):

1. precheck (size, UTF-8, syntax, entry point) -> ``rejected``;
2. start the harness in the sandbox, which reserves a region for the inputs
   (graders/grading/arena.py); time empty calls before any student code exists (the baseline),
   then let it import the submission; the sandbox stays frozen whenever it is not inside
   a call;
3. correctness: for every check size and declared check case, inputs drawn from a fresh
   secret seed and copied into the frozen sandbox; thaw, go, done, freeze; read the output
   from the frozen sandbox; run the reference on the same inputs, compare, check the
   inputs are unchanged;
4. timing: warmup, then calls with fresh seeds and a cache flush before each, each timed
   from outside less the baseline, until the spread is small or the budget is spent;
   every call is spot-checked (a secret sample of its output and inputs) once its round is
   over, and some, chosen while the sandbox is frozen after them, are verified like in step 3;
5. figures: roofline, peak fractions, the harness's own clock as a second opinion, score.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar, cast

from graders.errors import GraderError
from graders.grading import (
    fair_timing,
    forbidden_ops,
    hardware_profile,
    interpreted,
    precheck,
    runners,
    warm,
)
from graders.grading.model_wrapping import wrap_model_submission
from graders.grading.phases import Grader, Outcome, Run, comparison_fields
from graders.measure import calibrate
from graders.report import build as report
from graders.report.types import ContainmentKind, ProfileRow, Report, Verdict
from graders.sandbox import launch as sandbox
from graders.sandbox import slots
from graders.spec.exercise import ExerciseSpec

# Told the report as soon as its grade is final, before the informative profile is taken.
# Returning False leaves the profile for later (profile_code), e.g. while others wait.
OnGraded = Callable[[Report], bool | None]
T = TypeVar("T")
_log = logging.getLogger(__name__)


def _require_measure(spec: ExerciseSpec, device: str, timed: report.TimedFigures) -> None:
    curve = spec.scoring.curves.get(device)
    if (
        curve
        and curve.measure in ("relative_to_reference", "speedup_vs_naive")
        and timed.measure(curve.measure) is None
    ):
        raise GraderError(f"the {curve.measure} figure could not be measured (companion failed)")


def grade_code(
    spec: ExerciseSpec,
    source: str | bytes,
    device: str | None = None,
    *,
    slot: int | None = None,
    profile: bool = True,
    compare: bool = True,
    on_graded: OnGraded | None = None,
) -> Report:
    """Grade ``source`` against ``spec`` on ``device``; see the module docstring.

    ``slot`` selects the sandbox uid and CPU core; None takes a free one (see slots.py)
    and waits when all are busy, so concurrent gradings never share a timing core;
    ``compare`` times reference and naive alongside; ``profile`` adds top operators.
    ``on_graded``, when given, receives the report as soon as its grade is final, without
    the profile, which is then taken off the critical path; the returned report has it.
    Raises ValueError for a device the exercise does not support, GraderError when
    the grader itself failed; everything the submission does ends up in the report.
    """
    # A KernelBench-style submission may define only ModelNew; give it the exercise's entry.
    source = wrap_model_submission(spec, source)
    device = device or spec.devices[0]
    if device not in spec.devices:
        raise ValueError(f"exercise {spec.slug} supports {spec.devices}, not {device!r}")
    problem, _ = precheck.find_problem(source, spec.entry, spec.limits.source_bytes, device=device)
    if problem:  # answer rejections at once, without waiting for a slot
        builder = report.ReportBuilder(spec, device)
        return builder.finish("rejected", problem, total_s=0.0)
    try:
        with slots.acquire(slot) as held:
            grading = _Grading(spec, device, held, compare)
            return grading.grade(source, profile=profile, on_graded=on_graded)
    except GraderError:
        raise
    except Exception as exc:  # a bug of ours must not be blamed on the student
        raise GraderError(f"internal error while grading: {exc!r}") from exc


class _Grading:
    """One submission through a runner of the slot's bench (graders/grading/warm.py)."""

    def __init__(self, spec: ExerciseSpec, device: str, slot: int, compare: bool) -> None:
        self.spec, self.device, self.slot, self.compare = spec, device, slot, compare
        self.began = time.monotonic()
        self.builder = report.ReportBuilder(spec, device)

    def grade(self, source: str | bytes, *, profile: bool, on_graded: OnGraded | None) -> Report:
        spec, device = self.spec, self.device
        problem, text = precheck.find_problem(
            source, spec.entry, spec.limits.source_bytes, device=device
        )
        if problem:
            return self.builder.finish("rejected", problem, total_s=self._elapsed())
        # What its syntax suggests; on a CPU, Triton once a kernel is launched (interpreted.py).
        self.builder.language = precheck.language(text)
        try:
            peaks = calibrate.peaks(device, slot=self.slot)
        except GraderError:
            raise
        except Exception as exc:
            raise GraderError(f"calibration failed: {exc!r}") from exc
        self.builder.set_peaks(peaks)
        bench = warm.bench_for(spec, device, self.slot, peaks, self.compare)
        try:
            return self._grade_on(bench, text, profile, on_graded)
        finally:
            warm.release(bench)

    def _elapsed(self) -> float:
        return time.monotonic() - self.began

    def _grade_on(
        self, bench: warm.Bench, text: str, profile: bool, on_graded: OnGraded | None
    ) -> Report:
        waited_from = time.monotonic()
        runner = bench.take_runner()
        run = runner.run
        run.timings["sandbox_start_s"] = time.monotonic() - waited_from
        builder = self.builder
        try:
            runners.deliver(runner.scratch, text)
            ending = self._run_phases(bench, run)
            # Triton on a CPU is a kernel launched, not a decorator (grading/interpreted.py).
            builder.language = interpreted.observed_language(builder.language, self.device, run)
            if builder.interpreted and run.triton_autotuned:
                builder.notes.append(interpreted.AUTOTUNE_NOTE)
            verdict, message = self._verdict(run, ending)
            builder.correctness = run.correctness
            builder.timings = run.timings
            builder.device_name = self._device_name(run)
            builder.sandbox = self._sandbox_info(run, bench)
            profile_now = profile and ending is None
            if on_graded is not None and profile_now:
                # The grade is final here; the profile only informs, so it comes after, or
                # later still when the caller says so (it is then taken by profile_code).
                self._read_output(runner, settle_s=0.0)  # still running: what it printed so far
                final = builder.finish(verdict, message, total_s=self._elapsed())
                profile_now = on_graded(final) is not False
            if profile_now:
                builder.profile = self._informative("profile", lambda: bench.grader.profile(run))
                if self.device == "cuda":  # informative too, from a call of its own
                    builder.hardware_bytes = self._informative(
                        "hardware byte count", lambda: hardware_profile.measure(bench, text)
                    )
        finally:
            # The grade is decided (or a GraderError is on its way): ending the sandbox may
            # fail, but must not turn a finished grading into a failure of the grader.
            self._informative("sandbox's shutdown", runner.close)
        self._informative("program's output", lambda: self._read_output(runner))
        return builder.finish(verdict, message, total_s=self._elapsed())

    def _informative(self, what: str, step: Callable[[], T]) -> T | None:
        """Run a step taken after the grade is decided; whatever goes wrong in it (a pipe
        the sandbox closed, a profiler that failed) costs only that step, never the grade."""
        try:
            return step()
        except Exception as exc:  # any failure here must stay this step's
            _log.warning("%s failed after the grade: %r", what, exc)
            self.builder.notes.append(
                f"The {what} could not be taken after your grade was decided "
                f"({type(exc).__name__}); your grade does not depend on it."
            )
            return None

    def _run_phases(self, bench: warm.Bench, run: Run) -> Outcome | None:
        """Load, check and time ``run``; the Outcome that ended it early, if any."""
        grader, builder = bench.grader, self.builder
        try:
            grader.load(run, watch=forbidden_ops.watch_patterns(self.spec))
            with bench.hush():
                grader.check(run)
            builder.language = interpreted.observed_language(builder.language, self.device, run)
            if builder.interpreted:
                # Triton's interpreter on a CPU: its timing would say nothing and earn nothing,
                # and a tutorial-sized block takes seconds a call. One untimed call at the
                # timed size is checked, then the operator rule, as for any submission.
                with bench.hush():
                    interpreted.check_timed_size(grader, run)
                self._apply_forbid(grader, run)
                return None
            # Only a submission that passed its checks needs the companions: a cold bench
            # starts them now, a warm one has them running already.
            companions = bench.companions_for_grading() if self.compare else {}
            builder.companion_errors = dict(bench.companion_errors)
            try:
                with bench.hush():
                    remembered = bench.times if warm.enabled() else None
                    timed, builder.load = fair_timing.time_fairly(
                        grader, self.spec, self.device, run, companions, remembered
                    )
            finally:
                for name in bench.dropped(companions):
                    builder.companion_errors[name] = bench.companion_errors[name]
            _require_measure(self.spec, self.device, timed)
            builder.set_performance(timed, run.flags)
            self._apply_forbid(grader, run)
            return None
        except Outcome as outcome:
            return outcome

    def _apply_forbid(self, grader: Grader, run: Run) -> None:
        """[rules] forbid, from what the watch counted in every call since the load: a
        forbidden operator, or counts that cannot be believed, cost the performance points;
        a watch that could not be set costs nothing and is noted."""
        result = forbidden_ops.check(grader, run)
        if isinstance(result, forbidden_ops.Finding):
            self.builder.set_forbidden(result.rules, result.operators, result.message())
        elif isinstance(result, forbidden_ops.Unverified):
            self.builder.set_forbidden(list(result.rules), [], result.message())
        elif isinstance(result, forbidden_ops.Unwatched):
            self.builder.notes.append(result.note())

    def _verdict(self, run: Run, ending: Outcome | None) -> tuple[Verdict, str | None]:
        if ending is None:
            return "correct", None
        if ending.comparison is not None:
            run.correctness.update(comparison_fields(ending.comparison))
        self.builder.traceback = ending.traceback or None
        return ending.verdict, ending.message

    def _device_name(self, run: Run) -> str | None:
        # On CPU the harness only knows "cpu"; the model name is what a reader wants.
        return calibrate.device_name("cpu") if self.device == "cpu" else run.device_name

    def _sandbox_info(self, run: Run, bench: warm.Bench) -> report.SandboxInfo:
        info: report.SandboxInfo = {
            "mode": sandbox.mode(),
            "core": sandbox.pick_core(self.slot),
            "slot": self.slot,
            "containment": cast(ContainmentKind, run.containment.kind),
        }
        added = bench.dev.containment()
        if added:
            info["device"] = added
        return info

    def _read_output(self, runner: warm.Runner, settle_s: float = 2.0) -> None:
        process = runner.run.session.process
        self.builder.stderr = process.stderr.text(tail=4000, settle_s=settle_s)
        self.builder.stdout = process.stdout.text(tail=2000, settle_s=settle_s)


def profile_code(
    spec: ExerciseSpec,
    source: str | bytes,
    device: str | None = None,
    *,
    slot: int | None = None,
    compare: bool = True,
) -> list[ProfileRow] | None:
    """The informative profile of a submission graded earlier without one (its ``on_graded``
    left it for later): the code is imported into a fresh runner of the slot's bench, one
    call is profiled, and the runner is thrown away like any other. ``compare`` names the
    bench the slot's gradings use, so taking a profile does not close it. None when the
    submission does not load or the profile fails; nothing here can change a grade.
    """
    source = wrap_model_submission(spec, source)
    device = device or spec.devices[0]
    if device not in spec.devices:
        raise ValueError(f"exercise {spec.slug} supports {spec.devices}, not {device!r}")
    problem, text = precheck.find_problem(
        source, spec.entry, spec.limits.source_bytes, device=device
    )
    if problem:
        return None
    with slots.acquire(slot) as held:
        peaks = calibrate.peaks(device, slot=held)
        bench = warm.bench_for(spec, device, held, peaks, compare)
        try:
            runner = bench.take_runner()
            try:
                runners.deliver(runner.scratch, text)
                bench.grader.load(runner.run)
                return bench.grader.profile(runner.run)
            except Outcome:
                return None
            finally:
                runner.close()
        finally:
            warm.release(bench)
