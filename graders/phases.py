"""The phases of one grading, run against a sandboxed harness session.

``Grader`` drives a ``Run`` (one sandboxed child and its scratch dir) through
start-up, correctness checks and the timed phase; anything the submission does
wrong ends the run early with an ``Outcome`` carrying the verdict and the message
for the student. All checking happens here, in the trusted process: the child only
ever receives seeds and commands, and hands back descriptions, times and files.
"""

from __future__ import annotations

import io
import os
import secrets
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from . import correctness, measure, sandbox, trusted_code
from .errors import GraderError
from .harness import inputs as harness_inputs
from .report import TimedFigures
from .report_types import ProfileRow, Verdict
from .session import ChannelClosed, ChannelCorrupt, ChannelTimeout, TrustedChannel
from .spec import ExerciseSpec

_SAMPLE_PROBABILITY = 0.2
_FULL_CHECK_ELEMENTS = 1 << 22  # larger outputs are checked on a random sample
_SAMPLE_ELEMENTS = 1 << 14
_BACKGROUND_TICKS = 2  # clock ticks (usually 10 ms each) of tolerated idle-time CPU use
_DISTURBED_FRACTION = 0.02  # preempted for more than 2% of a call: measure it again


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
    save_counter: int = 0
    disturbed: list[float] = field(default_factory=list)  # preempted calls, kept aside
    device_name: str | None = None  # as the harness reported it (the GPU's name on CUDA)


def _layout(spec: ExerciseSpec, sizes: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {
            "name": item.name,
            "shape": list(item.concrete_shape(sizes)),
            "dtype": item.dtype,
            "dist": item.dist,
            "scale": item.scale,
        }
        for item in spec.inputs
    ]


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
    def __init__(self, spec: ExerciseSpec, device: str, slot: int) -> None:
        self.spec, self.device, self.slot = spec, device, slot
        self.reference = trusted_code.load(spec.reference_path, spec.entry, spec.content_hash)

    # ------------------------------------------------------------------ plumbing
    def _receive(self, run: Run, expect: tuple[str, ...], where: str, budget_name: str) -> dict:
        try:
            message = run.session.receive(run.deadline)
        except ChannelTimeout:
            limit = getattr(self.spec.limits, budget_name)
            raise Outcome(
                "timeout",
                f"Your code did not finish {where} within the {limit:g} s "
                f"limit. Look for infinite loops or very slow Python loops over "
                f"elements, then resubmit.",
            ) from None
        except ChannelClosed:
            raise self._died(run, where) from None
        except ChannelCorrupt as exc:
            raise Outcome(
                "error",
                "Your code wrote to the grader's private channel "
                f"({exc}); do not write to file descriptors you did not open.",
            ) from None
        if message["op"] in expect:
            return message
        if message["op"] in ("raised", "exited", "rejected"):
            verdict, text = _describe_failure(message, where)
            trace = message.get("traceback")
            raise Outcome(verdict, text, traceback=trace if isinstance(trace, str) else None)
        raise Outcome(
            "error",
            f"Unexpected message {message['op']!r} from the sandbox {where}; "
            "do not write to file descriptors you did not open.",
        )

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

    def _load_saved(self, run: Run, name: str) -> dict[str, Any]:
        """Read a file the sandbox wrote, defensively: it may be a symlink, FIFO or huge."""
        path = run.scratch.outbox / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise Outcome(
                "error",
                f"The output file could not be read ({exc.strerror}); "
                "do not touch the grader's files.",
            ) from None
        try:
            info = os.fstat(fd)
            cap = self.spec.limits.output_mb * 1024 * 1024
            if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
                raise Outcome(
                    "wrong",
                    f"Your output is larger than {self.spec.limits.output_mb}"
                    " MiB (or not a regular file); return only the result tensor.",
                )
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(cap + 1)
        finally:
            os.close(fd)
        try:
            payload = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        except Exception as exc:
            raise Outcome(
                "wrong",
                f"Your output could not be read safely ({type(exc).__name__})"
                "; return a plain torch.Tensor.",
            ) from None
        if not isinstance(payload, dict):
            raise Outcome("wrong", "The output file was replaced; do not touch grader files.")
        return payload

    def _expected(self, layout: list[dict[str, Any]], seed: int) -> tuple[list, torch.Tensor]:
        originals = harness_inputs.make(layout, seed, self.device)
        with torch.no_grad():
            expected = self.reference(*[t.clone() for t in originals])
        if not isinstance(expected, torch.Tensor):
            raise GraderError("the reference did not return a tensor")
        return originals, expected

    def call(
        self,
        run: Run,
        layout: list[dict[str, Any]],
        seed: int,
        flush: bool,
        where: str,
        budget: str,
    ) -> tuple[dict[str, Any], float]:
        began = time.monotonic()
        try:
            run.session.send("call", layout=layout, seed=seed, flush=flush)
        except ChannelClosed:
            raise self._died(run, where) from None
        done = self._receive(run, ("done",), where, budget)
        return done, time.monotonic() - began

    def verify(
        self,
        run: Run,
        layout: list[dict[str, Any]],
        seed: int,
        meta: dict[str, Any],
        where: str,
        budget: str,
    ) -> correctness.Comparison:
        originals, expected = self._expected(layout, seed)
        described = correctness.check_description(meta, expected, self.device)
        if not described.passed:
            raise Outcome("wrong", f"{described.message} ({where})")
        run.save_counter += 1
        name = f"result-{run.save_counter}.pt"
        sample = _sample_positions(expected, originals, layout)
        run.session.send("save", file=name, layout=layout, sample=sample)
        self._receive(run, ("saved",), where, budget)
        payload = self._load_saved(run, name)
        (run.scratch.outbox / name).unlink(missing_ok=True)
        got = payload.get("out")
        if not isinstance(got, torch.Tensor):
            raise Outcome("wrong", f"Your function did not return a tensor ({where}).")
        if sample is not None:
            out_positions = torch.tensor(sample["out"], dtype=torch.int64)
            expected = expected.reshape(-1)[out_positions.to(expected.device)]
            originals = [
                t.reshape(-1)[torch.tensor(sample[item["name"]], device=t.device)]
                for t, item in zip(originals, layout, strict=True)
            ]
        tol = correctness.tolerance_for(expected.dtype, self.spec.tolerance)
        result = correctness.compare(got, expected, tol)
        if sample is not None and result.first_mismatch is not None:
            # Report the position in the real output, not in the sample.
            flat = int(out_positions[result.first_mismatch["index"][0]])
            shape = tuple(meta["shape"])
            result.first_mismatch["index"] = [
                int(i) for i in torch.unravel_index(torch.tensor(flat), shape)
            ]
            result.details["sampled_positions"] = len(sample["out"])
        if not result.passed:
            raise Outcome(
                "wrong",
                f"Wrong result {where}: {result.message}",
                comparison=result,
            )
        if not self.spec.allow_input_mutation:
            names = [item["name"] for item in layout]
            changed = correctness.mutated_input(originals, payload.get("inputs", {}), names)
            if changed:
                raise Outcome(
                    "wrong",
                    f"Your function modified its input `{changed}` {where}. "
                    "Inputs are read-only: write the result to a new tensor.",
                    comparison=result,
                )
        return result

    # ------------------------------------------------------------------ phases
    def start(self, run: Run) -> None:
        started = time.monotonic()
        run.deadline = started + self.spec.limits.setup_s
        try:
            hello = run.session.receive(run.deadline)
        except (ChannelClosed, ChannelTimeout, ChannelCorrupt) as exc:
            # No student code has run yet, so this is the grader's (or the host's) fault.
            stderr = run.session.process.stderr.text(tail=3000)
            raise GraderError(
                f"the sandbox did not start ({type(exc).__name__}): {stderr}"
            ) from None
        if hello.get("op") != "hello":
            raise GraderError(f"unexpected first message from the harness: {hello}")
        run.timings["sandbox_start_s"] = time.monotonic() - started
        name = hello.get("device_name")
        run.device_name = name if isinstance(name, str) else None
        loaded_at = time.monotonic()
        self._receive(run, ("loaded",), "while your file was being imported", "setup_s")
        run.timings["setup_s"] = time.monotonic() - loaded_at

    def check(self, run: Run) -> None:
        began = time.monotonic()
        worst: correctness.Comparison | None = None
        plan = self.spec.sizes[self.device]
        for index, sizes in enumerate(plan.check):
            layout = _layout(self.spec, sizes)
            seed = secrets.randbits(63)
            where = f"for sizes {sizes}"
            run.correctness["trials"] = index + 1
            done, _ = self.call(run, layout, seed, False, where, "setup_s")
            result = self.verify(run, layout, seed, done["out"], where, "setup_s")
            if worst is None or (result.max_abs_err or 0) > (worst.max_abs_err or 0):
                worst = result
        run.correctness.update(comparison_fields(worst))
        run.timings["check_s"] = time.monotonic() - began

    def time_calls(self, run: Run, companions: dict[str, Run]) -> TimedFigures:
        """Timed phase. With companions (reference, naive), rounds alternate between the
        submission and each companion in a fresh random order, all on the same inputs,
        so slow drifts of the machine affect every contender alike."""
        phase = _TimedPhase(self, run, companions)
        round_index = 0
        while True:
            seed = secrets.randbits(63)
            warm = round_index < self.spec.timing.warmup
            round_index += 1
            order = ["student", *companions]
            secrets.SystemRandom().shuffle(order)
            stop = False
            for name in order:
                if name == "student":
                    stop = phase.student_call(seed, warm)
                else:
                    phase.companion_call(name, seed, warm)
            if not warm and stop:
                return phase.figures()

    def companion_call(
        self, companions: dict[str, Run], name: str, layout: list[dict[str, Any]], seed: int
    ) -> float | None:
        """One call of a trusted companion; on any failure drop it (never the student's fault)."""
        companion = companions[name]
        companion.deadline = time.monotonic() + 60
        try:
            done, _ = self.call(companion, layout, seed, True, f"({name})", "timed_s")
            companion.session.send("drop")
        except Outcome as failure:
            companion.flags.append(f"{name} failed: {failure.message}")
            del companions[name]
            return None
        seconds = max(int(done["ns"]), 0) / 1e9
        if _disturbed(done):
            companion.disturbed.append(seconds)
            return None
        return seconds

    def profile(self, run: Run) -> list[ProfileRow] | None:
        run.deadline = time.monotonic() + 30
        try:
            run.session.send("profile", top=8)
            ops = self._receive(run, ("profiled",), "while profiling", "timed_s").get("ops")
        except Outcome:
            return None
        # The sandbox wrote this: keep only rows of the shape the report promises.
        if not isinstance(ops, list):
            return None
        return [
            {"name": op["name"], "calls": op["calls"], "self_time_s": float(op["self_time_s"])}
            for op in ops
            if isinstance(op, dict)
            and isinstance(op.get("name"), str)
            and type(op.get("calls")) is int
            and op["calls"] >= 0
            and type(op.get("self_time_s")) in (int, float)
            and op["self_time_s"] >= 0
        ]


class _TimedPhase:
    """The running totals of one timed phase, and one call of each contender at a time."""

    def __init__(self, grader: Grader, run: Run, companions: dict[str, Run]) -> None:
        self.grader, self.run, self.companions = grader, run, companions
        self.began = time.monotonic()
        spec = grader.spec
        self.policy, self.limit = spec.timing, spec.limits.timed_s
        self.sizes = spec.sizes[grader.device].timed
        self.layout = _layout(spec, self.sizes)
        self.where = f"in the timed phase (sizes {self.sizes})"
        self.student_spent = 0.0  # the limit is for the submission's own calls only
        self.times: list[float] = []
        self.others: dict[str, list[float]] = {name: [] for name in companions}
        self.claimed, self.accounted, self.observed = 0.0, 0.0, 0.0
        self.verified = 0
        self.background = False
        self.disturbed: list[float] = []

    def companion_call(self, name: str, seed: int, warm: bool) -> None:
        if name not in self.companions:
            return  # it failed earlier in this round's order
        if not warm and measure.should_stop(self.others[name], self.policy, 0.0, float("inf")):
            return  # its median is pinned down; stop spending time on it
        pid = self.run.session.process.pid
        ticks = _cpu_ticks(pid)
        seconds = self.grader.companion_call(self.companions, name, self.layout, seed)
        if seconds is not None and not warm:
            self.others[name].append(seconds)
        # The submission should be idle, blocked on our pipe; CPU time spent now would
        # slow the companion sharing its core and inflate the ratio.
        if _cpu_ticks(pid) - ticks > _BACKGROUND_TICKS:
            self.background = True

    def student_call(self, seed: int, warm: bool) -> bool:
        """Time one call of the submission; True once the median is known well enough."""
        run, policy, limit = self.run, self.policy, self.limit
        run.deadline = time.monotonic() + max(0.0, limit - self.student_spent)
        done, round_trip = self.grader.call(run, self.layout, seed, True, self.where, "timed_s")
        self.student_spent += round_trip
        if warm:
            run.session.send("drop")
            return False
        seconds = max(int(done["ns"]), 0) / 1e9
        if (
            _disturbed(done)
            and len(self.disturbed) < policy.max_runs
            and self.student_spent < 0.5 * limit
            and time.monotonic() - self.began < limit
        ):
            self.disturbed.append(seconds)  # preempted: measure again instead
        else:
            self.times.append(seconds)
        self.claimed += seconds
        # Time the child was runnable but waiting for the core (busy machine) is accounted
        # for too; the call's own preemption is already in ``ns``.
        queued = max(int(done.get("queued_ns", 0)) - int(done.get("wait_ns", 0)), 0)
        overhead = max(int(done.get("overhead_ns", 0)), 0)
        self.accounted += seconds + (overhead + queued) / 1e9
        self.observed += round_trip
        stop = bool(self.times) and (
            measure.should_stop(self.times, policy, self.student_spent, limit)
            # Companions, verification and a busy machine all add wall time; the whole
            # phase stays within 2x the limit so a worker's timeout holds.
            or time.monotonic() - self.began > 2 * limit
        )
        # Which calls get verified is decided only now, after the call returned.
        pick = secrets.randbelow(1000) < _SAMPLE_PROBABILITY * 1000
        if stop or (pick and self.verified < policy.verified_samples - 1):
            self.verified += 1
            where = f"{self.where}, timed call {len(self.times)}"
            self.grader.verify(run, self.layout, seed, done["out"], where, "timed_s")
        else:
            run.session.send("drop")
        return stop

    def figures(self) -> TimedFigures:
        run = self.run
        summary = measure.summarize(self.times)
        claimed, observed = self.claimed, self.observed
        if claimed > observed * 1.02 + 1e-3 or (
            observed > 0.05 and self.accounted < 0.5 * observed
        ):
            run.flags.append("timing_inconsistent")
        run.timings["timing_s"] = time.monotonic() - self.began
        run.correctness["timed_calls_verified"] = self.verified
        others = self.others
        for name, companion in self.companions.items():
            if len(others[name]) < 3:  # a very busy machine: better noisy than nothing
                others[name] = others[name] + companion.disturbed
        if self.background:
            run.flags.append("background_activity")
            others = {}  # the relative figures cannot be trusted
        medians = {name: measure.summarize(t).median_s for name, t in others.items() if t}

        def ratio(name: str) -> float | None:
            median = medians.get(name)
            return median / summary.median_s if median and summary.median_s > 0 else None

        return TimedFigures(
            summary=summary,
            sizes=dict(self.sizes),
            claimed_s=claimed,
            observed_s=observed,
            disturbed_runs=len(self.disturbed),
            reference_median_s=medians.get("reference"),
            naive_median_s=medians.get("naive"),
            relative_to_reference=ratio("reference"),
            speedup_vs_naive=ratio("naive"),
        )


def _sample_positions(
    expected: torch.Tensor, originals: list[torch.Tensor], layout: list[dict[str, Any]]
) -> dict[str, list[int]] | None:
    """Secret random flat positions to check when the tensors are too big to ship whole.

    Chosen after the call returned, so a submission cannot compute just these. A
    wrong kernel is almost never right on 16k random positions, and moving 3 GiB
    of CUDA tensors through files per verified call would dominate the grading.
    """
    if expected.numel() <= _FULL_CHECK_ELEMENTS:
        return None
    generator = torch.Generator().manual_seed(secrets.randbits(63))

    def pick(numel: int) -> list[int]:
        if numel <= _SAMPLE_ELEMENTS:
            return list(range(numel))
        positions = torch.randint(numel, (_SAMPLE_ELEMENTS,), generator=generator)
        return torch.unique(positions).tolist()

    sample = {"out": pick(expected.numel())}
    for tensor, item in zip(originals, layout, strict=True):
        sample[item["name"]] = pick(tensor.numel())
    return sample


def comparison_fields(result: correctness.Comparison | None) -> dict[str, Any]:
    if result is None:
        return {}
    return {
        "max_abs_err": result.max_abs_err,
        "max_rel_err": result.max_rel_err,
        "mismatch_fraction": result.mismatch_fraction,
        "first_mismatch": result.first_mismatch,
    }


def _disturbed(done: dict[str, Any]) -> bool:
    """Was the call preempted for a noticeable part of its duration?"""
    waited, took = int(done.get("wait_ns", 0) or 0), max(int(done["ns"]), 1)
    return waited > max(_DISTURBED_FRACTION * took, 20_000)


def _cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` and all its descendants (threads included), in ticks."""
    total = 0
    for member in [pid, *sandbox.descendants(pid)]:
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total
