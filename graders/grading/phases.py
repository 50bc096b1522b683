"""The phases of one grading, run against a sandboxed harness session.

``Grader`` drives a ``Run`` (one sandboxed child and its scratch dir) through start-up, the
empty-call baseline, correctness checks and the timed phase; anything the submission does
wrong ends the run early with an ``Outcome`` carrying the verdict and the message for the
student. The trusted side owns what earns points: it fills the inputs in shared memory from
its secret seed while the sandbox is frozen, times each call from outside (thaw, go, done,
freeze), reads the sandbox's CPU time and run-queue wait from outside, and reads the output
from the frozen sandbox's memory before it decides whether to check it.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import secrets
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from graders.devices.base import Device, InputStage, OutputUnreadable, SettleFailed, Unplaceable
from graders.errors import GraderError
from graders.grading import correctness, trusted_code
from graders.grading.compile_clock import CompileClock
from graders.measure import companion_times
from graders.measure import load as machine_load
from graders.measure import stats as measure
from graders.measure.companion_times import CompanionTimes, Remembered
from graders.report.build import TimedFigures
from graders.report.types import ProfileRow, Verdict
from graders.sandbox import launch as sandbox
from graders.sandbox import protocol
from graders.sandbox.containment import Containment, stalled_between
from graders.sandbox.pin_thread import on_core
from graders.sandbox.session import ChannelClosed, ChannelCorrupt, ChannelTimeout, TrustedChannel
from graders.spec.exercise import ExerciseSpec
from graders.spec.layouts import input_layout

_SAMPLE_PROBABILITY = 0.2
# Values of each timed call's output (and of each input) compared in its spot check: one
# wrong value in a thousand is found with a chance of 98 %, a stale answer at once.
_SPOT_VALUES = 4096
_DISTURBED_FRACTION = 0.02  # preempted for more than 2% of a call: measure it again
# Stall a call may show before it counts as preempted: less than a scheduler time slice,
# more than the kernel's own work on the core around a thaw and a freeze.
_STALL_SLACK_NS = 500_000
_BASELINE_CALLS, _BASELINE_WARMUP = 12, 3
_OUTSIDE_CPU_NS = 2_000_000  # CPU time between calls, where a frozen sandbox has none
_CPU_SLACK_NS = 300_000  # counters are read a few microseconds apart from the clock
# In-process time below half the outside figure, less 1 ms, is a forged second opinion.
_CLAIM_FLOOR, _CLAIM_SLACK_S = 0.5, 1e-3
_WINDOW_NICE = -15  # the grading thread's priority inside a call's window
# The profiled call's budget: at most _PROFILE_S, less when the timed calls were quick.
_PROFILE_S, _PROFILE_FIXED_S, _PROFILE_CALLS = 30.0, 3.0, 20
_CANARY_S = 20.0  # a companion's canary (two triads and flushes) takes well under a second
_FLOOR_S = 1e-9  # a call at or below the empty call's cost counts as this, never 0 or less


class Outcome(Exception):
    """Ends a grading early with a verdict (raised by the phases, caught by the engine).

    ``comparison`` is the failed comparison of a wrong result (its figures go in the report),
    ``traceback`` what the submission raised.
    """

    def __init__(
        self,
        verdict: Verdict,
        message: str,
        *,
        comparison: correctness.Comparison | None = None,
        traceback: str | None = None,
    ) -> None:
        super().__init__(message)
        self.verdict, self.message = verdict, message
        self.comparison, self.traceback = comparison, traceback


@dataclass
class Run:
    spec: ExerciseSpec
    device: str
    session: TrustedChannel
    scratch: sandbox.Scratch
    deadline: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    correctness: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    disturbed: list[float] = field(default_factory=list)  # preempted calls, kept aside
    device_name: str | None = None  # as the harness reported it (the GPU's name on CUDA)
    host_pid: int = 0  # the harness's pid outside the sandbox's pid namespace (set by start)
    inputs_address: int = 0  # where the harness reserved the region the inputs are copied to
    pool_address: int = 0  # CUDA: where the harness mapped the device memory pool
    device_memory: Any = None  # CUDA: the trusted side's handle on that pool
    dev: Device | None = None  # the device it runs on, told when the sandbox goes
    # The budget of the import and the check calls: setup_s, plus the time a compiler ran in
    # the sandbox, up to compile_s (graders/grading/compile_clock.py); armed by load().
    setup_clock: CompileClock | None = None
    # Triton kernels launched so far, and of those through @triton.autotune, as the harness
    # counts them under Triton's interpreter (a CPU worker; graders/grading/interpreted.py).
    triton_launches: int = 0
    triton_autotuned: int = 0
    # The timed layout (its repr) this sandbox has already been called on: a companion kept
    # across gradings needs no warm-up rounds for it again (TimedPhase.companion_call).
    warmed_for: str | None = None
    baseline_ns: int = 0  # the median window of an empty call, measured before import
    # Its interquartile range: the median is subtracted from every window, so what is left of
    # the fixed cost in a figure is this spread, not the cost itself (gpu-check judges it).
    baseline_spread_ns: int = 0
    median_call_s: float | None = None  # the timed phase's figure, once it has one
    cpu_mark: int = 0  # the sandbox's CPU time when it was last frozen
    # What the trusted side did, in order ("fill", "place", "flush", "thaw", "go", "done",
    # "settle", "freeze", "read_output", ...): the protocol's order, kept for the tests.
    events: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=4096))

    @property
    def containment(self) -> Containment:
        return self.session.process.containment

    def close(self) -> None:
        """End the sandbox, then give back its device memory (none on the CPU)."""
        try:
            self.session.close()
        finally:
            if self.dev is not None:
                self.dev.forget(self)
            if self.device_memory is not None:
                self.device_memory.close()
                self.device_memory = None


@dataclass(frozen=True)
class CallTiming:
    """What the trusted side read around one call; the sandbox wrote none of it but claimed_ns."""

    window_ns: int  # thaw + go .. done + frozen, on our clock
    net_ns: int  # the window less the empty call's
    cpu_ns: int  # the whole sandbox's CPU time in the window (exited threads included)
    # Wall time in the window when the sandbox wanted its core and something else had it
    # (containment.stalled_between). A sleep of its own, or its own threads taking turns,
    # is not counted: the submission must not be able to make a call look disturbed.
    stalled_ns: int
    claimed_ns: int  # the harness's in-process figure: a second opinion, never a score
    # How long this (trusted) thread waited for a core inside the window: late to read
    # ``done`` and to freeze, it stretched the window with no fault of the sandbox's.
    our_wait_ns: int = 0
    calls: int = 1  # calls of the submission in the window, each on inputs of its own

    def seconds(self) -> float:
        """The submission's time per call: the net window shared by the calls it held."""
        return max(self.net_ns / self.calls / 1e9, _FLOOR_S)

    def disturbed(self) -> bool:
        """Kept off its core, or we were, for a noticeable part of the call: measure again."""
        allowed = max(_DISTURBED_FRACTION * self.window_ns, _STALL_SLACK_NS)
        return self.stalled_ns > allowed or self.our_wait_ns > allowed


def _describe_failure(message: dict[str, Any], where: str) -> tuple[Verdict, str]:
    """(verdict, student-facing message) for a raised/exited/rejected harness message."""
    op = message["op"]
    if op == "rejected":
        return "rejected", f"{message['reason'].capitalize()}. Fix it and resubmit."
    if op == "exited":
        return "error", (
            f"Your code called exit() (code {message.get('code')}) {where} "
            "instead of returning a result. Remove the exit call and resubmit."
        )
    kind, text, line = (
        message.get("type", "Exception"),
        message.get("message", ""),
        message.get("line"),
    )
    at = f" at line {line}" if line else ""
    if (
        kind in ("MemoryError", "OutOfMemoryError")
        or "out of memory" in text.lower()
        or "can't allocate memory" in text.lower()
    ):
        return "error", (
            f"Your code ran out of memory{at} {where}: {kind}: {text[:300]}. "
            "Avoid large temporary tensors and resubmit."
        )
    return "error", f"Your code raised {kind}{at} {where}: {text[:500]}; fix it and resubmit."


class Grader:
    def __init__(
        self,
        spec: ExerciseSpec,
        device: str,
        slot: int,
        inputs: InputStage,
        dev: Device,
        *,
        memory_bound: bool = False,
    ) -> None:
        self.spec, self.device, self.slot = spec, device, slot
        self.arena, self.dev = inputs, dev
        self.memory_bound = memory_bound
        self.reference = trusted_code.load(spec.reference_path, spec.entry, spec.content_hash)
        # What the memory-bus canary compares with (graders/measure/load.py); None: no canary.
        self.bus_yardstick: machine_load.Yardstick | None = None
        # The best share the canary read on this bench: a calibration taken on a busy moment
        # reads low, and would hide a shared bus behind a share near 1.
        self.bus_best_share = 1.0

    # ------------------------------------------------------------------ plumbing
    def receive(
        self, run: Run, expect: tuple[str, ...], where: str, budget_name: str
    ) -> dict[str, Any]:
        clock = run.setup_clock if budget_name == "setup_s" else None
        try:
            if clock is not None and clock.owns(run.deadline):
                message = _receive_by(run, clock)
            else:
                message = run.session.receive(run.deadline)
        except ChannelTimeout:
            raise Outcome("timeout", self._ran_out(where, budget_name, clock)) from None
        except ChannelClosed:
            raise self._died(run, where) from None
        except ChannelCorrupt as exc:
            raise Outcome(
                "error",
                "Your code wrote to the grader's private channel "
                f"({exc}); do not write to file descriptors you did not open.",
            ) from None
        try:
            message = protocol.validate(message, expect)
        except protocol.Malformed as exc:
            raise Outcome(
                "error",
                f"The sandbox sent the grader a malformed message {where} ({exc}). "
                "Do not write to the grader's file descriptors or patch its harness; "
                "return your result from your function.",
            ) from None
        if message["op"] in expect:
            return message
        verdict, text = _describe_failure(message, where)
        raise Outcome(verdict, text, traceback=message.get("traceback"))

    def _ran_out(self, where: str, budget_name: str, clock: CompileClock | None = None) -> str:
        """The student's message for a budget that ran out, naming which one it was."""
        limit = getattr(self.spec.limits, budget_name)
        if budget_name == "timed_s":
            budget = f"the timed phase gives your calls {limit:g} s in all"
            hint = "Make each call faster (the timed inputs are the largest)"
        else:
            budget = f"your file's import and the correctness checks together have {limit:g} s"
            hint = "Look for infinite loops, sleeps or very slow Python loops over elements"
            if clock is not None and clock.extra_s > 0:
                budget += (
                    ", plus the time a compiler runs in your sandbox (it ran "
                    f"{clock.credited_s:.1f} s), up to {clock.compile_s:g} s in all"
                )
                if clock.credited_s > 0:
                    hint = (
                        "Your kernels were compiled in this time too: look for a compile that "
                        "never ends or an infinite loop at import"
                    )
        return (
            f"Your code did not finish {where}: {budget}, and that ran out. {hint}, then resubmit."
        )

    def pause(self, run: Run, where: str) -> None:
        """Freeze the sandbox once its code has run; if it cannot be stopped, that is the
        submission's doing (a storm of new processes, a task stuck in the kernel), never a
        grader failure it could use as a free retry."""
        try:
            run.containment.freeze()
        except GraderError as exc:
            raise Outcome(
                "error",
                f"Your program could not be paused {where} ({exc}). Do not start processes "
                "or threads that keep running after your function returns.",
            ) from None

    def _died(self, run: Run, where: str) -> Outcome:
        process = run.session.process
        code = process.wait(timeout=5)
        if code is None:  # still running: it closed our pipe itself
            process.kill()
            return Outcome(
                "error",
                f"Your code closed the grader's private channel {where}; do not close "
                "file descriptors you did not open.",
            )
        if process.oom_killed():
            return Outcome(
                "error",
                f"Your code ran out of memory {where} (limit "
                f"{self.spec.limits.memory_mb} MiB) and was killed.",
            )
        if code is not None and code > 128:
            code = -(code - 128)  # bwrap reports a child killed by signal N as 128+N
        if code == 0:
            return Outcome(
                "error",
                f"Your program exited (status 0) {where} before returning "
                "a result. Do not call exit(), sys.exit() or os._exit(); return "
                "the result from your function.",
            )
        if code is not None and code < 0:
            import signal

            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            hint = {
                "SIGKILL": " (often: out of memory)",
                "SIGXCPU": " (CPU time limit)",
                "SIGSEGV": " (invalid memory access)",
                "SIGXFSZ": " (file size limit)",
            }
            return Outcome(
                "error",
                f"Your program was killed by {name}{hint.get(name, '')} "
                f"{where}. Fix it and resubmit.",
            )
        return Outcome(
            "error",
            f"Your program exited with status {code} {where} before "
            "returning a result. Fix it and resubmit.",
        )

    def _expected(
        self, layout: list[dict[str, Any]], seed: int
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        """The inputs drawn from ``seed`` (on the device they were staged on) and the
        reference's output for them."""
        originals = self.arena.staged(layout, seed)
        if originals is None:
            originals = self.arena.regenerate(layout, seed)
        elif self.spec.allow_input_mutation:
            # The staged inputs themselves (no second draw). An exercise whose reference may
            # write its inputs gets copies, so the next contender of the round still gets
            # what was drawn.
            originals = [t.clone() for t in originals]
        with torch.no_grad():
            expected = self.reference(*originals)
        if not isinstance(expected, torch.Tensor):
            raise GraderError("the reference did not return a tensor")
        return originals, expected

    def call(
        self,
        run: Run,
        layout: list[dict[str, Any]],
        seeds: list[int],
        *,
        flush: bool,
        where: str,
        budget: str,
    ) -> tuple[dict[str, Any], CallTiming]:
        """One measured window: set ``i`` of the inputs drawn from ``seeds[i]`` and staged
        while the sandbox is frozen, the caches flushed, then thaw, go, done, settle,
        freeze, with the clock and the CPU counters read from outside. The window holds
        the submission's calls (one per seed) and the device's settle, nothing else."""
        for index, seed in enumerate(seeds):
            self.arena.fill(layout, seed, index)
            run.events.append("fill")
            self.place_inputs(run, layout, where, index)
        go: dict[str, Any] = {
            "calls": [self.arena.placements(layout, index) for index in range(len(seeds))]
        }
        if flush:
            self.dev.flush()
            run.events.append("flush")
        box = run.containment
        cpu_before = box.cpu_ns()
        stall_before = box.stall_mark()
        if cpu_before - run.cpu_mark > _OUTSIDE_CPU_NS and "cpu_outside_calls" not in run.flags:
            run.flags.append("cpu_outside_calls")
        with _prompt_wakeup(sandbox.pick_core(self.slot)):
            waited = _our_run_delay_ns()
            began = time.perf_counter_ns()
            self.thaw(run, where)
            try:
                run.session.send("go", **go)
                run.events.append("go")
            except ChannelClosed:
                raise self._died(run, where) from None
            done = self.receive(run, ("done",), where, budget)
            run.events.append("done")
            run.triton_launches = done.get("triton_launches", run.triton_launches)
            run.triton_autotuned = done.get("triton_autotuned", run.triton_autotuned)
            if len(done["outs"]) != len(seeds):
                raise Outcome(
                    "error",
                    f"The sandbox answered {len(done['outs'])} calls where {len(seeds)} were "
                    f"made {where}. Do not patch the grader's harness.",
                )
            remaining = max(run.deadline - time.monotonic(), 0.001)
            self._device_step(run, where, lambda: self.dev.settle(run, remaining))
            run.events.append("settle")
            self.pause(run, where)
            run.events.append("freeze")
            window = time.perf_counter_ns() - began
        run.cpu_mark = box.cpu_ns()
        cpu = run.cpu_mark - cpu_before
        timing = CallTiming(
            window_ns=window,
            net_ns=window - run.baseline_ns,
            cpu_ns=cpu,
            stalled_ns=stalled_between(stall_before, box.stall_mark(), cpu),
            claimed_ns=int(done["ns"]),
            our_wait_ns=_our_run_delay_ns() - waited,
            calls=len(seeds),
        )
        problem = self.dev.memory_problem(run, self.spec.limits.gpu_memory_mb)
        if problem:
            raise Outcome("error", f"{problem} ({where})")
        return done, timing

    def thaw(self, run: Run, where: str) -> None:
        """Let the sandbox run again: thaw it, then lift what the last settle left on it (on
        CUDA, the driver's lock), so its next CUDA call does not wait forever."""
        run.containment.thaw()
        run.events.append("thaw")
        self._device_step(run, where, lambda: self.dev.resume(run))
        run.events.append("resume")

    def _device_step(self, run: Run, where: str, step: Callable[[], None]) -> None:
        """A device's resume or settle; what it refuses is the sandbox's doing."""
        try:
            step()
        except SettleFailed as exc:
            if exc.timed_out:
                raise Outcome(
                    "timeout",
                    f"Your GPU work was still running {where} when its time ran out. Look "
                    "for kernels that never finish, then resubmit.",
                ) from None
            raise Outcome(
                "error",
                f"Your program's device work could not be followed {where}: {exc}. Leave "
                "the CUDA driver's own threads and the grader's harness alone.",
            ) from None

    def place_inputs(
        self, run: Run, layout: list[dict[str, Any]], where: str, index: int = 0
    ) -> None:
        """Make the staged inputs visible to the frozen sandbox (on the CPU: a copy)."""
        with _region_reachable(where):
            self.arena.place(layout, run, index)
        run.events.append("place")

    def verify(
        self,
        run: Run,
        layout: list[dict[str, Any]],
        seed: int,
        meta: dict[str, Any],
        where: str,
        index: int = 0,
    ) -> correctness.Comparison:
        """Check the output of the call just made (the sandbox is still frozen); ``index``
        is the input set it was computed from."""
        originals, expected = self._expected(layout, seed)
        described = correctness.check_description(meta, expected, self.device)
        if not described.passed:
            raise Outcome("wrong", f"{described.message} ({where})")
        cap = self.spec.limits.output_mb * 1024 * 1024
        try:
            got = self.dev.read_output(meta, run, cap)
            run.events.append("read_output")
        except OutputUnreadable as exc:
            raise Outcome(
                "error",
                f"Your output could not be read {where}: {exc}. Return a plain torch.Tensor "
                "that your function computed, and leave the grader's process alone.",
            ) from None
        tol = correctness.tolerance_for(expected.dtype, self.spec.tolerance)
        result = correctness.compare(got, expected, tol)
        if not result.passed:
            raise Outcome("wrong", f"Wrong result {where}: {result.message}", comparison=result)
        if not self.spec.allow_input_mutation:
            names = [item["name"] for item in layout]
            with _region_reachable(where):
                placed = self.arena.placed(layout, run, index)
            now = dict(zip(names, placed, strict=True))
            changed = correctness.mutated_input(originals, now, names)
            if changed:
                raise Outcome(
                    "wrong",
                    f"Your function modified its input `{changed}` {where}. "
                    "Inputs are read-only: write the result to a new tensor.",
                    comparison=result,
                )
        return result

    def spot_check(
        self,
        run: Run,
        layout: list[dict[str, Any]],
        seed: int,
        meta: dict[str, Any],
        where: str,
        index: int = 0,
        reference: tuple[Run, dict[str, Any]] | None = None,
    ) -> None:
        """Check a secret sample of the output of a call (the sandbox is still frozen), and of
        its inputs, against the reference on the same inputs; anything amiss is then checked
        in full by :meth:`verify`, which words the student's message.

        Every timed call gets this, so no call is safe to fake: an answer cached from an
        earlier call, or skipped in calls the submission hopes are not read, is wrong in
        most of its values, and a sample of them finds it at once. Only the sampled values'
        bytes are read, never padding the submission could watch for faults.

        ``reference`` is the reference companion's sandbox and its output for the same set,
        from the same round: its values are then read at the sample instead of the reference
        being run here again (for vector-add on a CPU, 25 ms of the 43 ms a check costs).
        """
        cap = self.spec.limits.output_mb << 20
        generator = torch.Generator().manual_seed(secrets.randbits(63))

        def pick(count: int) -> torch.Tensor:
            size = min(count, _SPOT_VALUES)
            return torch.randint(0, max(count, 1), (size,), generator=generator)

        picks, want = self._reference_sample(meta, reference, pick)
        if want is None:
            originals, expected = self._expected(layout, seed)
            if not correctness.check_description(meta, expected, self.device).passed:
                self.verify(run, layout, seed, meta, where, index)
                return
            picks = pick(expected.numel())
            want = expected.reshape(-1)[picks.to(expected.device)]
        else:
            staged = self.arena.staged(layout, seed)
            originals = staged if staged is not None else self.arena.regenerate(layout, seed)
        run.correctness["sampled_positions"] = picks.numel()
        try:
            got = self.dev.read_sample(meta, run, cap, picks)
        except OutputUnreadable:
            got = None
        tol = correctness.tolerance_for(want.dtype, self.spec.tolerance)
        if got is None or not correctness.compare(got, want.to(got.device), tol).passed:
            self.verify(run, layout, seed, meta, where, index)
            return
        if self.spec.allow_input_mutation:
            return
        samples = [pick(tensor.numel()) for tensor in originals]
        with _region_reachable(where):
            now = self.arena.placed_sample(layout, run, index, samples)
        for before, after, sample in zip(originals, now, samples, strict=True):
            if not torch.equal(
                before.reshape(-1)[sample.to(before.device)], after.to(before.device)
            ):
                self.verify(run, layout, seed, meta, where, index)
                return

    def _reference_sample(
        self,
        meta: dict[str, Any],
        reference: tuple[Run, dict[str, Any]] | None,
        pick: Callable[[int], torch.Tensor],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(picks, the reference's values there) read from the reference companion's output,
        or (empty, None) where there is none to read or the submission's output is not of its
        kind (then the reference runs here, and a wrong kind is worded by verify)."""
        nothing = torch.empty(0, dtype=torch.int64), None
        if reference is None:
            return nothing
        companion, described = reference
        if any(meta.get(key) != described.get(key) for key in ("type", "shape", "dtype", "device")):
            return nothing
        picks = pick(math.prod(described["shape"]))
        try:
            return picks, self.dev.read_sample(
                described, companion, self.spec.limits.output_mb << 20, picks
            )
        except OutputUnreadable:
            return nothing

    # ------------------------------------------------------------------ phases
    def start(self, run: Run) -> None:
        """Wait for the harness, measure the empty call, then let it import the submission."""
        self.greet(run)
        self.load(run)

    def greet(self, run: Run, *, patience: float = 1.0) -> None:
        """Wait for the harness's hello, freeze it and measure the empty call: everything
        before the submission's first line runs. ``patience`` stretches the wait (a runner
        started ahead of time may be frozen while other gradings time their calls)."""
        self.await_hello(run, patience=patience)
        self.measure_baseline(run)

    def await_hello(self, run: Run, *, patience: float = 1.0) -> None:
        started = time.monotonic()
        run.deadline = started + self.spec.limits.setup_s * patience
        try:
            hello = protocol.validate(run.session.receive(run.deadline), ("hello",))
        except (ChannelClosed, ChannelTimeout, ChannelCorrupt, protocol.Malformed) as exc:
            # No student code has run yet, so this is the grader's (or the host's) fault.
            stderr = run.session.process.stderr.text(tail=3000)
            raise GraderError(f"the sandbox did not start ({exc!r}): {stderr}") from None
        if hello["op"] != "hello":
            raise GraderError(f"the harness failed before any student code ran: {hello}")
        host_pid = run.session.process.host_pid(hello["pid"])
        if host_pid is None:
            raise GraderError("the harness's process could not be found from outside")
        run.host_pid = host_pid
        run.inputs_address = hello["inputs_address"]
        run.pool_address = hello.get("pool_address", 0)
        run.timings["sandbox_start_s"] = time.monotonic() - started
        run.device_name = hello["device_name"]
        run.containment.freeze()
        run.cpu_mark = run.containment.cpu_ns()

    def load(self, run: Run, watch: tuple[str, ...] = ()) -> None:
        """Let the harness import the submission, which must already be in its inbox.
        ``watch``: name patterns of the operators the harness counts from before the import
        on ([rules] forbid, graders/grading/forbidden_ops.py); companions have none."""
        loaded_at = time.monotonic()
        # Whatever an earlier grading left where this sandbox reads its inputs goes first.
        with _region_reachable("before your file was imported"):
            self.arena.scrub(run)
        run.events.append("scrub")
        limits = self.spec.limits
        clock = CompileClock(run.containment.pids, loaded_at, limits.setup_s, limits.compile_s)
        run.setup_clock, run.deadline = clock, clock.look(loaded_at)
        self.thaw(run, "while your file was being imported")
        run.session.send("load", watch=list(watch))
        self.receive(run, ("loaded",), "while your file was being imported", "setup_s")
        self.pause(run, "after your file was imported")
        run.cpu_mark = run.containment.cpu_ns()
        run.timings["setup_s"] = time.monotonic() - loaded_at

    def measure_baseline(self, run: Run) -> None:
        """The cost of a call that does nothing, measured before any student code exists.

        The median of several is subtracted from every window: the submission cannot
        inflate it (it is not imported yet). The median, not the least, because every
        window carries a typical, not a best-case, thaw, pipe and freeze; what a
        submission could gain by trimming the harness is bounded by the harness's own
        share of it, a fraction of a millisecond.
        """
        layout = input_layout(self.spec, self.spec.sizes[self.device].timed)
        # As many empty calls per window as the timed windows will hold submission calls.
        seeds = [secrets.randbits(63) for _ in range(self.arena.sets)]
        windows = []
        for index in range(_BASELINE_CALLS):
            where = "while the grader measured an empty call"
            # Flushed like a timed call: after a flush the harness's own path runs cold too,
            # and that cost belongs to the empty call, not to the submission.
            _, timing = self.call(run, layout, seeds, flush=True, where=where, budget="setup_s")
            if index >= _BASELINE_WARMUP:
                windows.append(timing.window_ns)
        run.baseline_ns = int(statistics.median(windows))
        low, _, high = statistics.quantiles(windows, n=4)
        run.baseline_spread_ns = max(0, int(high - low))

    def check(self, run: Run) -> None:
        began = time.monotonic()
        worst: correctness.Comparison | None = None
        plan = self.spec.sizes[self.device]
        trials: list[tuple[str, list[dict[str, Any]]]] = [
            (f"for sizes {sizes}", input_layout(self.spec, sizes)) for sizes in plan.check
        ]
        for case in self.spec.check_cases:
            sizes = case.sizes_for(self.device)
            layout = input_layout(self.spec, sizes, case)
            trials.append((f"on the check case `{case.name}` (sizes {sizes})", layout))
        # One budget for the import and every check call together (armed by load): a
        # deadline per call would let a submission hold the slot for calls x limit.
        for index, (where, layout) in enumerate(trials):
            seed = secrets.randbits(63)
            run.correctness["trials"] = index + 1
            done, _ = self.call(run, layout, [seed], flush=False, where=where, budget="setup_s")
            result = self.verify(run, layout, seed, done["outs"][0], where)
            if worst is None or (result.max_abs_err or 0) > (worst.max_abs_err or 0):
                worst = result
        run.correctness.update(comparison_fields(worst))
        run.timings["check_s"] = time.monotonic() - began

    def time_calls(
        self, run: Run, companions: dict[str, Run], remembered: CompanionTimes | None = None
    ) -> TimedFigures:
        """Timed phase. With companions (reference, naive), rounds alternate between the
        submission and each companion in a fresh random order, all on the same inputs,
        so slow drifts of the machine affect every contender alike. ``remembered`` lets a
        companion's median from an earlier grading stand in for a full measurement, checked
        by a few interleaved calls (graders/measure/companion_times.py)."""
        with _on_core(sandbox.pick_core(self.slot)):
            return self._rounds(TimedPhase(self, run, companions, remembered))

    def _rounds(self, phase: TimedPhase) -> TimedFigures:
        """The timed phase's rounds, until the submission's figure is known."""
        companions = phase.companions
        round_index = 0
        while True:
            # One seed per call of the window; every contender of the round gets the same.
            seeds = [secrets.randbits(63) for _ in range(self.arena.sets)]
            warm = round_index < self.spec.timing.warmup
            round_index += 1
            order = ["student", *companions]
            secrets.SystemRandom().shuffle(order)
            if phase.anchor in order:
                # The anchor right before or after the submission: a host's bandwidth wanders
                # from one tenth of a second to the next, and a pair's ratio cancels only what
                # both of its calls saw.
                order.remove(phase.anchor)
                order.insert(order.index("student") + secrets.randbelow(2), phase.anchor)
            stop = False
            for name in order:
                if name == "student":
                    stop = phase.student_call(seeds, warm)
                else:
                    phase.companion_call(name, seeds, warm)
            phase.check_round(seeds)
            if not warm and stop:
                return phase.figures()

    def companion_call(
        self, companions: dict[str, Run], name: str, layout: list[dict[str, Any]], seeds: list[int]
    ) -> tuple[float | None, dict[str, Any] | None]:
        """One call of a trusted companion: (its time, None when disturbed; its ``done``). On
        any failure drop it (never the student's fault): (None, None)."""
        companion = companions[name]
        companion.deadline = time.monotonic() + 60
        try:
            done, timing = self.call(
                companion, layout, seeds, flush=True, where=f"({name})", budget="timed_s"
            )
        except Outcome as failure:
            companion.flags.append(f"{name} failed: {failure.message}")
            del companions[name]
            return None, None
        seconds = timing.seconds()
        if timing.disturbed():
            companion.disturbed.append(seconds)
            return None, done
        return seconds, done

    def bus_canary(self, companions: dict[str, Run]) -> float | None:
        """The share of the calibrated memory bandwidth a trusted companion's sandbox gets
        now, on the grading core (graders/harness/bus_canary.py); None without a yardstick or
        a companion, or when the canary failed (then the companion's next call tells)."""
        yardstick = self.bus_yardstick
        companion = companions.get("reference") or companions.get("naive")
        if yardstick is None or companion is None:
            return None
        companion.deadline = time.monotonic() + _CANARY_S
        try:
            # Like a call: the grading core is the canary's alone while it reads the bus.
            with _prompt_wakeup(sandbox.pick_core(self.slot)):
                self.thaw(companion, "(canary)")
                companion.session.send(
                    "canary",
                    n=yardstick.n,
                    flush_bytes=yardstick.flush_bytes,
                    runs=machine_load.CANARY_RUNS,
                )
                reply = self.receive(companion, ("canary",), "(canary)", "timed_s")
                self.pause(companion, "(canary)")
        except (Outcome, ChannelClosed):
            return None
        # The canary's CPU time is ours, not work done between the companion's calls.
        companion.cpu_mark = companion.containment.cpu_ns()
        share = yardstick.share(float(reply["best_s"]))
        self.bus_best_share = max(self.bus_best_share, share)
        # Against the calibration or the best this bench has seen, whichever is higher.
        return round(share / self.bus_best_share, 3)

    def wait_for_quiet_bus(self, companions: dict[str, Run]) -> None:
        """Bounded patience before timing again: poll the canary until the bus reads quiet,
        at most machine_load.PATIENCE_S; without a canary, one poll interval's pause."""
        give_up = time.monotonic() + machine_load.PATIENCE_S
        while True:
            share = self.bus_canary(companions)
            if share is None:
                time.sleep(machine_load.POLL_S)
                return
            if share >= machine_load.BUS_BUSY_BELOW or time.monotonic() > give_up:
                return
            time.sleep(machine_load.POLL_S)

    def profile(self, run: Run) -> list[ProfileRow] | None:
        """Top operators of one call; informative only, so it earns and costs nothing."""
        layout = input_layout(self.spec, self.spec.sizes[self.device].timed)
        self.arena.fill(layout, secrets.randbits(63))
        # The grade is decided and the slot still held: a call that takes much longer than
        # the timed ones (a sleep kept for the profile) is cut off and only the profile lost.
        budget = _PROFILE_S
        if run.median_call_s is not None:
            budget = min(budget, _PROFILE_FIXED_S + _PROFILE_CALLS * run.median_call_s)
        run.deadline = time.monotonic() + budget
        try:
            self.place_inputs(run, layout, "while profiling")
            self.thaw(run, "while profiling")
            run.session.send("profile", inputs=self.arena.placements(layout), top=8)
            ops = self.receive(run, ("profiled",), "while profiling", "timed_s")["ops"]
            self.pause(run, "after profiling")
        except Outcome:
            return None
        # The sandbox wrote this: keep only rows of the shape the report promises.
        return [
            {"name": op["name"], "calls": op["calls"], "self_time_s": float(op["self_time_s"])}
            for op in ops
            if isinstance(op, dict)
            and isinstance(op.get("name"), str)
            and len(op["name"]) <= 200
            and type(op.get("calls")) is int
            and op["calls"] >= 0
            and type(op.get("self_time_s")) in (int, float)
            and 0 <= op["self_time_s"] < 1e6
        ]


class TimedPhase:
    """The running totals of one timed phase, and one call of each contender at a time."""

    def __init__(
        self,
        grader: Grader,
        run: Run,
        companions: dict[str, Run],
        remembered: CompanionTimes | None = None,
    ) -> None:
        self.grader, self.run, self.companions = grader, run, companions
        self.remembered = remembered
        spec = grader.spec
        # A relative curve divides by a companion (its anchor): per round where both were
        # timed, the anchor's time over the submission's. Their median is the ratio scored,
        # and timing goes on until it is known, not the submission's own median: a host whose
        # bandwidth wanders slows both contenders of a round alike (graders/measure/load.py).
        self.curve = curve = spec.scoring.curves.get(grader.device)
        anchor = machine_load.RELATIVE_MEASURES.get(curve.measure) if curve else None
        self.anchor = anchor if spec.scoring.performance_points > 0 else None
        self.paired: list[float] = []
        # Per companion, the remembered median this grading may reuse (None: measure in full).
        # Never the anchor's: a median from another moment cancels none of this one's load,
        # and the submission's median would then have to be pinned down alone, which on a
        # wandering host takes every run the policy allows.
        self.reusing: dict[str, Remembered | None] = {
            name: remembered.reusable(name) if remembered and name != self.anchor else None
            for name in companions
        }
        self.began = time.monotonic()
        self.policy, self.limit = spec.timing, spec.limits.timed_s
        self.sizes = spec.sizes[grader.device].timed
        self.layout = input_layout(spec, self.sizes)
        if grader.arena.pool_suits(self.layout, grader.memory_bound):
            grader.arena.use_pool(self.layout, secrets.randbits(63))
        self.where = f"in the timed phase (sizes {self.sizes})"
        self.student_spent = 0.0  # the limit is for the submission's own calls only
        self.times: list[float] = []
        self.claimed: list[float] = []  # the harness's own figures, a second opinion
        # Per kept call, the net window less the time this process waited for a core in it:
        # a busy machine that makes us late to read ``done`` and freeze inflates the window
        # but not the harness's clock, and must not read as a forged one.
        self.outside: list[float] = []
        self.others: dict[str, list[float]] = {name: [] for name in companions}
        self.observed = 0.0
        self.verified = 0
        self.spot_checked = 0
        # The submission's last call, to be checked at the end of its round (check_round),
        # and the reference companion's output in that round, if it ran.
        self.pending: tuple[dict[str, Any], int | None, str] | None = None
        self.reference_done: dict[str, Any] | None = None
        self.disturbed: list[float] = []
        self.stalled_kept = 0  # disturbed calls scored anyway, once patience ran out
        self.round_times: dict[str, float] = {}
        self.bus_shares: list[float] = []
        # A curve paired round by round cancels a shared bus (graders/measure/load.py): the
        # canary only informs its report, and one reading, after the phase, does that (each
        # costs 30 ms in a kept companion, 0.2 s in a fresh one, which faults in its buffers).
        if not self.pairing():
            self._read_bus()
        if self.bus_shares and self.bus_shares[-1] < machine_load.BUS_BUSY_BELOW:
            # A median remembered from a quieter moment is no yardstick for a busy one: the
            # companions are timed in full, in the same rounds as the submission.
            self.reusing = {name: None for name in companions}

    def _read_bus(self) -> None:
        share = self.grader.bus_canary(self.companions)
        if share is not None:
            self.bus_shares.append(share)

    def pairing(self) -> bool:
        """True while the anchor companion is timed in every round beside the submission
        (it has not failed)."""
        return self.anchor is not None and self.anchor in self.companions

    def companion_call(self, name: str, seeds: list[int], warm: bool) -> None:
        if name not in self.companions:
            return  # it failed earlier in this round's order
        layout_key = repr(self.layout)
        if warm and self.companions[name].warmed_for == layout_key:
            return  # kept from an earlier grading, and already called on these sizes there
        known, checks = self.reusing.get(name), self.others[name]
        if not warm and known is not None and len(checks) >= companion_times.CHECK_CALLS:
            if not CompanionTimes.drifted(known, checks):
                return  # the remembered median holds; the checks are enough
            self.reusing[name] = None  # the machine changed: measure it in full
        paired = name == self.anchor and self.pairing()
        if not warm and not paired and measure.should_stop(checks, self.policy, 0.0, float("inf")):
            return  # its median is pinned down; stop spending time on it
        # Beside a relative curve, a companion that is neither its anchor nor the reference
        # (whose outputs the spot checks use) earns nothing: it only places the naive version
        # on the report's ladder, which a few calls do as well as many.
        shown_only = self.anchor is not None and name not in (self.anchor, "reference")
        if not warm and shown_only and len(checks) >= companion_times.CHECK_CALLS:
            return
        seconds, done = self.grader.companion_call(self.companions, name, self.layout, seeds)
        if name in self.companions:
            self.companions[name].warmed_for = layout_key
        if seconds is not None and not warm:
            self.others[name].append(seconds)
            self.round_times[name] = seconds
        if name == "reference" and done is not None:
            self.reference_done = done  # its output: the expected values of this round

    def student_call(self, seeds: list[int], warm: bool) -> bool:
        """Time one call of the submission; True once the median is known well enough."""
        run, policy, limit = self.run, self.policy, self.limit
        run.deadline = time.monotonic() + max(0.0, limit - self.student_spent)
        done, timing = self.grader.call(
            run, self.layout, seeds, flush=True, where=self.where, budget="timed_s"
        )
        self.student_spent += timing.window_ns / 1e9
        self._judge(timing)
        if warm:
            return False
        seconds = timing.seconds()
        if (
            timing.disturbed()
            and len(self.disturbed) < policy.max_runs
            and self.student_spent < 0.5 * limit
            and time.monotonic() - self.began < limit
        ):
            self.disturbed.append(seconds)  # preempted: measure again instead
        else:
            self.stalled_kept += timing.disturbed()
            self.round_times["student"] = seconds
            self.times.append(seconds)
            self.claimed.append(timing.claimed_ns / timing.calls / 1e9)
            self.outside.append(max(timing.net_ns - timing.our_wait_ns, 0) / timing.calls / 1e9)
        self.observed += timing.window_ns / 1e9
        stop = bool(self.times) and (
            self.known_well_enough()
            # Companions, verification and a busy machine all add wall time; the whole
            # phase stays within 2x the limit so a worker's timeout holds.
            or time.monotonic() - self.began > 2 * limit
        )
        # Which calls get verified in full is decided only now: the sandbox is frozen and its
        # output is fixed in its memory, so it cannot compute just the calls that are checked.
        # Every other call of the window is spot-checked, so none is safe to fake.
        pick = secrets.randbelow(1000) < _SAMPLE_PROBABILITY * 1000
        full = None
        if stop or (pick and self.verified < policy.verified_samples - 1):
            self.verified += 1
            full = secrets.randbelow(len(seeds))  # any call of the window may be the one
        # Checked once the round is over (check_round): the sandbox stays frozen until its
        # next call, and the reference companion may by then have computed the same inputs.
        self.pending = (done, full, f"{self.where}, timed call {len(self.times)}")
        return stop

    def known_well_enough(self) -> bool:
        """What the curve scores is known: the ratio to the anchor, counting this round's
        pair when the anchor already ran in it, or else the submission's median."""
        policy, spent, limit = self.policy, self.student_spent, self.limit
        if not self.pairing():
            return measure.should_stop(self.times, policy, spent, limit)
        ratios = list(self.paired)
        if self.anchor in self.round_times and "student" in self.round_times:
            ratios.append(self.round_times[self.anchor] / self.round_times["student"])
        return measure.at_cap(self.times, policy, spent, limit) or machine_load.ratio_known(
            ratios, policy, self.curve, policy.min_runs
        )

    def check_round(self, seeds: list[int]) -> None:
        """Check the submission's call of the round just over: in full where it was picked,
        else a spot check, against the reference companion's output of the same round where
        it ran (its inputs are still those staged), else the reference run here."""
        pending, self.pending = self.pending, None
        reference_done, self.reference_done = self.reference_done, None
        times, self.round_times = self.round_times, {}
        anchor = self.anchor or "reference"
        if "student" in times and anchor in times:
            self.paired.append(times[anchor] / times["student"])
        if pending is None:
            return  # a warm-up round
        done, full, where = pending
        companion = self.companions.get("reference")
        for index, seed in enumerate(seeds):
            out = done["outs"][index]
            if index == full:
                self.grader.verify(self.run, self.layout, seed, out, where, index)
                continue
            reference = None
            if companion is not None and reference_done is not None:
                reference = (companion, reference_done["outs"][index])
            self.grader.spot_check(self.run, self.layout, seed, out, where, index, reference)
            self.spot_checked += 1

    def _judge(self, timing: CallTiming) -> None:
        """Flags from what was read outside; each costs the performance points, never a crash."""
        flags = self.run.flags
        # More CPU time than wall time: a second core was at work (no cpuset pinned it).
        if timing.cpu_ns > timing.window_ns * 1.05 + _CPU_SLACK_NS and "second_core" not in flags:
            flags.append("second_core")

    def figures(self) -> TimedFigures:
        run = self.run
        summary = measure.summarize(self.times)
        run.median_call_s = summary.median_s
        # A phase timed twice (graders/grading/fair_timing.py) raises each flag once.
        if summary.median_s <= _FLOOR_S and "implausible_speed" not in run.flags:
            run.flags.append("implausible_speed")  # faster than a call that does nothing
        claimed = measure.summarize(self.claimed).median_s
        outside = measure.summarize(self.outside).median_s
        # The harness's own clock may only agree or cost: claiming much less than the
        # outside clock saw means its timer or channel was tampered with.
        if (
            claimed < outside * _CLAIM_FLOOR - _CLAIM_SLACK_S
            and "timing_inconsistent" not in run.flags
        ):
            run.flags.append("timing_inconsistent")
        run.timings["timing_s"] = time.monotonic() - self.began
        run.correctness["timed_calls_verified"] = self.verified
        run.correctness["timed_calls_spot_checked"] = self.spot_checked
        others = self.others
        disturbed_companions = []
        for name, companion in self.companions.items():
            if len(others[name]) < 3 and companion.disturbed:  # better noisy than nothing
                others[name] = others[name] + companion.disturbed
                disturbed_companions.append(name)
        self._read_bus()
        signals = machine_load.LoadSignals(
            bus_shares=tuple(self.bus_shares),
            stalled_retaken=len(self.disturbed),
            stalled_kept=self.stalled_kept,
            companions_disturbed=tuple(disturbed_companions),
            precise=measure.median_rel_error(self.times) <= self.policy.target_median_error,
            # Only a relative curve scores the ratio; too few rounds say it was not steady.
            ratio_precise=self.anchor is None
            or machine_load.ratio_known(
                self.paired, self.policy, self.curve, machine_load.MIN_PAIRED_ROUNDS
            ),
        )
        # The ratio a relative curve scores, where its anchor was timed in every round: the
        # median of the rounds' ratios, so a drift between rounds cancels too.
        round_by_round = self.pairing() and len(self.paired) >= machine_load.MIN_PAIRED_ROUNDS
        medians = {name: measure.summarize(t).median_s for name, t in others.items() if t}
        reused: dict[str, float] = {}
        now = time.monotonic()
        for name in list(medians):
            known = self.reusing.get(name)
            # On a shared bus only what was timed beside the submission is a fair yardstick,
            # and what was timed then is no yardstick for a quiet moment: neither is kept.
            if signals.bus_busy:
                continue
            if known is not None and not CompanionTimes.drifted(known, others[name]):
                medians[name] = known.median_s
                reused[name] = round(now - known.measured_at, 1)
                if self.remembered is not None:
                    self.remembered.reused(name)
            elif self.remembered is not None:
                spread = measure.summarize(others[name]).rel_iqr
                self.remembered.remember(name, medians[name], spread, now)

        def ratio(name: str) -> float | None:
            if name == self.anchor and round_by_round:
                return statistics.median(self.paired)
            median = medians.get(name)
            return median / summary.median_s if median and summary.median_s > 0 else None

        return TimedFigures(
            summary=summary,
            sizes=dict(self.sizes),
            claimed_s=sum(self.claimed),
            observed_s=self.observed,
            disturbed_runs=len(self.disturbed),
            reference_median_s=medians.get("reference"),
            naive_median_s=medians.get("naive"),
            relative_to_reference=ratio("reference"),
            speedup_vs_naive=ratio("naive"),
            companions_reused=reused or None,
            calls_per_window=self.grader.arena.sets,
            empty_window_s=run.baseline_ns / 1e9,
            empty_window_spread_s=run.baseline_spread_ns / 1e9,
            load=signals,
        )


@contextlib.contextmanager
def _on_core(core: int | None) -> Iterator[None]:
    """Run this thread's share of a timed phase on the grading core: between two calls every
    sandbox there is frozen and the core is idle, while the other cores serve the site. The
    inputs' draws and copies and the spot checks (most of a round's wall time) then neither
    wait behind the web server nor slow it; each call's window moves the thread off again
    (:func:`_prompt_wakeup`), and the cache flush before it runs there anyway."""
    with on_core(core) as previous:
        if previous is None:  # no core, or not allowed on it: run where we are
            yield
            return
        _pinned.allowed = previous  # where a call's window may move the thread to
        try:
            yield
        finally:
            del _pinned.allowed


# The cores a thread pinned by _on_core may use otherwise (per thread: gradings of other slots
# run in threads of their own).
_pinned = threading.local()


@contextlib.contextmanager
def _prompt_wakeup(sandbox_core: int | None) -> Iterator[None]:
    """Keep this thread off the sandbox's core, at a high CPU priority, for one call's window.

    Woken by ``done``, it must read it and freeze the sandbox at once. Having just flushed
    the cache from the sandbox's core, it used to be woken there, behind the sandbox itself,
    or behind the web server elsewhere: a third of the calls here waited 2 to 4 ms for a core,
    and each was measured again. The thread sleeps in select() for nearly all of the window,
    so the priority takes little from others; it is not a real-time one, because the
    freezer's own kernel work must still get a core while this thread waits for the freeze.
    Without CAP_SYS_NICE (a root worker has it) only the affinity changes.
    """
    restore: list[Callable[[], None]] = []
    others = getattr(_pinned, "allowed", None) or os.sched_getaffinity(0)
    others = others - {sandbox_core}
    if sandbox_core is not None and others:
        previous = os.sched_getaffinity(0)
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, others)
            restore.append(lambda: os.sched_setaffinity(0, previous))
    thread = threading.get_native_id()
    with contextlib.suppress(OSError):
        nice = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, _WINDOW_NICE)
        restore.append(lambda: os.setpriority(os.PRIO_PROCESS, thread, nice))
    try:
        yield
    finally:
        for undo in reversed(restore):
            with contextlib.suppress(OSError):
                undo()


def _receive_by(run: Run, clock: CompileClock) -> dict[str, Any]:
    """The next message, by the deadline ``clock`` moves on while a compiler runs."""
    while True:
        now = time.monotonic()
        run.deadline = clock.look(now)
        if now >= run.deadline:
            raise ChannelTimeout()
        with contextlib.suppress(ChannelTimeout):
            return run.session.receive(clock.wake_at(now))


def _our_run_delay_ns() -> int:
    """Nanoseconds this thread has spent runnable but waiting for a core (0 if unknown)."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as stats:
            return int(stats.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


@contextlib.contextmanager
def _region_reachable(where: str) -> Iterator[None]:
    """The sandbox made its input region unreachable: its own doing, so its ``error``."""
    try:
        yield
    except Unplaceable as exc:
        raise Outcome(
            "error",
            f"The grader could not copy the inputs into your program's memory {where} "
            f"({exc}). Do not unmap, protect or replace memory your program did not allocate.",
        ) from None


def comparison_fields(result: correctness.Comparison | None) -> dict[str, Any]:
    if result is None:
        return {}
    return {
        "max_abs_err": result.max_abs_err,
        "max_rel_err": result.max_rel_err,
        "mismatch_fraction": result.mismatch_fraction,
        "first_mismatch": result.first_mismatch,
    }
