"""Warm runners: a grading finds its sandboxes already started.

A grading used to start three sandboxes (submission, reference, naive), each importing torch
(1.5 to 2 s here) and measuring its empty-call baseline before the submission's first line
ran. With warm runners on (``GRADERS_WARM=1``, which the Celery worker sets), each grading slot
of a worker process keeps, per exercise version:

- a :class:`Bench`: the trusted side's input arena and cache flusher, the reference loaded in
  this process, and the two companion sandboxes (reference and naive). They run only the
  course's own code and never see a submission, so they serve every grading of that exercise
  on the slot, and :class:`~graders.measure.companion_times.CompanionTimes` remembers their times;
- up to ``GRADERS_WARM_RUNNERS`` (2) :class:`Runner` s: sandboxes for submissions to come,
  started with torch imported, the profiler started and their input region reserved, then
  frozen and, once no grading holds the slot, given their empty-call baseline. All of that
  happens before any student code exists in them. A runner takes exactly one submission and
  is then thrown away, so nothing of one student's run is ever seen by the next, exactly as
  when every grading started its own.

Nothing starts or measures while a call is timed: runners are started after a grading's timed
phase, a runner still importing is frozen while a grading checks and times calls
(:meth:`Bench.hush`), and baselines are measured only while this thread holds the slot's lock,
which a grading holds throughout. An idle runner's CPU time is read when it is assigned: one
that ran while it should have been frozen is thrown away.

With warm runners off (the default for library calls, tests and the command line) the bench
and its runner live for one grading, which is the engine's behaviour before this module.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

from graders import devices
from graders.errors import GraderError
from graders.grading import runners
from graders.grading.phases import Grader, Outcome, Run
from graders.measure import calibrate
from graders.measure import load as machine_load
from graders.measure.companion_times import CompanionTimes
from graders.sandbox import launch as sandbox
from graders.sandbox import slots
from graders.spec.exercise import ExerciseSpec
from graders.spec.layouts import input_layout

logger = logging.getLogger(__name__)

# A runner started ahead may sit frozen while other gradings time their calls: its hello
# gets this many times the exercise's setup limit.
_WARM_PATIENCE = 3.0
_RETRY_S = 0.25  # how often a runner waiting for its baseline looks at the slot again
# CPU time an idle, frozen runner may show when assigned: counters read microseconds apart.
_IDLE_CPU_SLACK_NS = 2_000_000
# Companions live across gradings; retire them well before their RLIMIT_CPU ends them.
_COMPANION_CPU_SHARE = 0.5


def enabled() -> bool:
    return os.environ.get("GRADERS_WARM", "") == "1"


def pool_size() -> int:
    try:
        return max(0, int(os.environ.get("GRADERS_WARM_RUNNERS", "2")))
    except ValueError:
        return 2


class Runner:
    """One submission's sandbox, started before that submission is known."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        slot = bench.slot
        uid = sandbox.slot_uid(slot) if sandbox.mode() == "root" else None
        self.scratch = sandbox.Scratch(uid)
        try:
            # Warm runners (a worker's) start the profiler ahead too; a cold one, started
            # when its grading needs it, would make that grading wait for it.
            self.run = bench.start_run(self.scratch, None, warm_profiler=enabled())
        except BaseException:
            self.scratch.close()
            raise
        self.greeted = False  # said hello and frozen
        self.measured = False  # its baseline is known
        self.taken = False
        self.lock = threading.Lock()  # held while one thread moves it on
        self.state = threading.Lock()  # held only around greeted/freeze/thaw decisions

    def greet(self, patience: float) -> None:
        self.bench.grader.await_hello(self.run, patience=patience)
        with self.state:
            self.greeted = True
            self.run.containment.freeze()  # again: a hush may have thawed it meanwhile

    def measure(self) -> None:
        try:
            self.bench.grader.measure_baseline(self.run)
        except Outcome as exc:  # no student code has run: this is ours
            raise GraderError(f"the empty calls failed before any submission: {exc}") from None
        self.measured = True

    def idle_cpu_ns(self) -> int:
        return self.run.containment.cpu_ns() - self.run.cpu_mark

    def close(self) -> None:
        try:
            self.run.close()
        finally:
            self.scratch.close()


class Bench:
    """What every grading of one exercise version on one slot shares (see the module docs)."""

    def __init__(
        self,
        spec: ExerciseSpec,
        device: str,
        slot: int,
        peaks: dict[str, Any],
        compare: bool,
    ) -> None:
        self.spec, self.device, self.slot, self.compare = spec, device, slot, compare
        self.key = bench_key(spec, device, slot, peaks, compare)
        # The device: where inputs are staged, how caches are flushed and calls settle.
        self.dev = devices.for_kind(device, slot)
        self.arena = runners.stage_for(spec, self.dev, peaks)
        self.grader = Grader(
            spec,
            device,
            slot,
            self.arena,
            self.dev,
            memory_bound=runners.memory_bound(spec, device, peaks),
        )
        self.grader.bus_yardstick = machine_load.yardstick(
            device, peaks, calibrate.timed_elements(device), spec.limits.memory_mb
        )
        self.times = CompanionTimes()
        self.companions: dict[str, Run] = {}
        self.companion_errors: dict[str, str] = {}
        self._companion_scratch: list[sandbox.Scratch] = []
        self.runners: list[Runner] = []  # started ahead, oldest first
        self.healthy = True
        self.closed = False
        self.lock = threading.Lock()
        self._companions_lock = threading.Lock()
        self._companions_started = False
        self._refiller: threading.Thread | None = None
        self._stager: threading.Thread | None = None

    # ------------------------------------------------------------------ companions
    def _start_companions(self) -> None:
        """Sandboxed children running the reference and naive code, for relative figures.

        They get their own scratch dirs and their own uid, so no submission's sandbox can
        read their code or signal them. Started once per bench, by the first grading that
        needs them or ahead of it by the refill thread.
        """
        with self._companions_lock:
            if self._companions_started or self.closed:
                return
            self._companions_started = True
            self._start_each_companion()

    def _start_each_companion(self) -> None:
        files = {"reference": self.spec.reference_path, "naive": self.spec.naive_path}
        uid = sandbox.companion_uid(self.slot) if sandbox.mode() == "root" else None
        for name, path in files.items():
            if path is None:
                continue
            scratch = sandbox.Scratch(uid)
            self._companion_scratch.append(scratch)
            companion = self.start_run(scratch, path.read_text(), uid=uid)
            self.companions[name] = companion
            try:
                self.grader.start(companion)
            except (GraderError, Outcome) as exc:
                self.companion_errors[name] = str(exc)
                del self.companions[name]
                companion.close()

    def start_run(
        self, scratch: sandbox.Scratch, text: str | None, uid: int | None = None, **options: Any
    ) -> Run:
        """A sandbox of this bench: its inputs, and device memory of its own where the device
        gives sandboxes that (CUDA)."""
        memory = self.dev.sandbox_memory(self.spec.limits.gpu_memory_mb)
        try:
            session = runners.start_session(
                self.spec,
                self.device,
                self.slot,
                scratch,
                text,
                self.arena,
                uid,
                device_memory=memory,
                **options,
            )
        except BaseException:
            if memory is not None:
                memory.close()
            raise
        run = Run(self.spec, self.device, session, scratch)
        run.device_memory, run.dev = memory, self.dev
        return run

    def companions_for_grading(self) -> dict[str, Run]:
        """The companions that are up, cleared of the last grading's per-call notes."""
        self._start_companions()
        for companion in self.companions.values():
            companion.disturbed.clear()
            companion.flags.clear()
        return dict(self.companions)

    def dropped(self, used: dict[str, Run]) -> list[str]:
        """Companions the timed phase dropped (they failed a call). Their reason goes into
        ``companion_errors``, and the bench retires after this grading, as it does when a
        companion nears its CPU limit: the next grading starts fresh ones."""
        gone = [name for name in self.companions if name not in used]
        for name in gone:
            self.companion_errors[name] = "; ".join(self.companions[name].flags) or "failed"
            self.healthy = False
        limit_ns = runners.cpu_limit_s(self.spec) * 1e9 * _COMPANION_CPU_SHARE
        for companion in used.values():
            with contextlib.suppress(Exception):
                if companion.containment.cpu_ns() > limit_ns:
                    self.healthy = False
        return gone

    # ------------------------------------------------------------------ runners
    def take_runner(self) -> Runner:
        """A runner with its baseline measured, from the pool or started now.

        The caller holds the slot, so no other grading times a call meanwhile.
        """
        while True:
            with self.lock:
                runner = self.runners.pop(0) if self.runners else None
            if runner is None:
                return self._ready(Runner(self))
            try:
                return self._ready(runner)
            except GraderError as exc:  # a runner gone bad while waiting: start another
                logger.warning("A warm runner could not be used (%s); starting another", exc)

    def _ready(self, runner: Runner) -> Runner:
        with runner.lock:
            runner.taken = True
            try:
                if not runner.greeted:
                    runner.greet(patience=_WARM_PATIENCE)
                elif runner.run.session.process.poll() is not None:
                    raise GraderError("the runner exited while it waited")
                elif runner.idle_cpu_ns() > _IDLE_CPU_SLACK_NS:
                    raise GraderError("the runner used CPU time while it should have been frozen")
                if not runner.measured:
                    runner.measure()
            except BaseException:
                runner.close()
                raise
        return runner

    def refill(self) -> None:
        """Top up the pool (warm runners on only).

        Called by a grading once its calls are timed, while it still holds the slot: a
        sandbox is started here and now unless one is still importing, so a grading that
        follows at once finds it importing (it freezes it while it times, see :meth:`hush`);
        a background thread waits for each runner's hello, measures its baseline whenever
        the slot is free, and starts the next runner the pool lacks, one at a time.
        """
        with self.lock:
            if self.closed or not enabled():
                return
            # One importing at a time: two would share the slot's core and both be late for
            # a submission that comes a few seconds after this one (the refill thread
            # starts the next once this one is ready).
            if len(self.runners) < pool_size() and all(r.greeted for r in self.runners):
                self._start_runner()
            # The next grading's inputs, on a thread of their own: drawn on another core as
            # soon as the slot is free, while the runner started above imports torch on the
            # slot's. Drawn after the runners were ready, they were missing for a student who
            # resubmitted within 2-3 s, whose grading drew them in its timed phase (0.65 s for
            # vector-add here).
            if self._stager is None or not self._stager.is_alive():
                self._stager = threading.Thread(
                    target=self._stage_pool, name=f"graders-inputs-{self.slot}", daemon=True
                )
                self._stager.start()
            if self._refiller is not None and self._refiller.is_alive():
                return
            self._refiller = threading.Thread(
                target=self._prepare_all, name=f"graders-warm-{self.slot}", daemon=True
            )
            self._refiller.start()

    def _start_runner(self) -> bool:
        """Start one runner for the pool (the caller holds ``self.lock``); False if it failed."""
        try:
            self.runners.append(Runner(self))
        except Exception:
            logger.exception("A warm runner could not be started")
            return False
        return True

    def _prepare_all(self) -> None:
        while True:
            with self.lock:
                pending = [r for r in self.runners if not r.measured and not r.taken]
                if self.closed:
                    return
            if pending:
                if not self._prepare(pending[0]):
                    return
            elif not self._start_next():
                break

    def _start_next(self) -> bool:
        """Start the next runner the pool lacks once no grading holds the slot, so that
        nothing is timed while it starts; False when the pool is full or one fails."""
        while True:
            with self.lock:
                if self.closed or len(self.runners) >= pool_size():
                    return False
            with slots.attempt(self.slot) as held:
                if held:
                    with self.lock:
                        if self.closed or len(self.runners) >= pool_size():
                            return False
                        return self._start_runner()
            time.sleep(_RETRY_S)

    def _stage_pool(self) -> None:
        """Draw the next grading's input pool (a quarter of a second for vector-add) while
        no grading holds the slot, so the grading does not wait for it."""
        layout = input_layout(self.spec, self.spec.sizes[self.device].timed)
        if not self.arena.pool_suits(layout, self.grader.memory_bound):
            return
        while not self.closed and not self.arena.pool_staged():
            with slots.attempt(self.slot) as held:
                if held:
                    self.arena.stage_pool(layout, secrets.randbits(63))
                    return
            time.sleep(_RETRY_S)

    def _prepare(self, runner: Runner) -> bool:
        """Greet it, then measure its baseline once no grading holds the slot."""
        try:
            with runner.lock:
                if runner.taken:
                    return True
                if not runner.greeted:
                    runner.greet(patience=_WARM_PATIENCE)
            while True:
                with runner.lock:
                    if runner.taken or self.closed:
                        return True
                    with slots.attempt(self.slot) as held:
                        if held:
                            runner.measure()
                            return True
                time.sleep(_RETRY_S)
        except Exception:
            if not self.closed:  # a bench being closed kills its runners mid-preparation
                logger.exception("A warm runner failed while it was prepared")
            with self.lock:
                if runner in self.runners:
                    self.runners.remove(runner)
            with contextlib.suppress(Exception):
                runner.close()
            return False

    @contextlib.contextmanager
    def hush(self) -> Iterator[None]:
        """Freeze the runners still importing while calls are checked and timed."""
        with self.lock:
            starting = [r for r in self.runners if not r.greeted]
        frozen = []
        for runner in starting:
            with runner.state:
                if runner.greeted:
                    continue
                try:
                    runner.run.containment.freeze()
                except GraderError:
                    continue  # it is being killed; its preparation will fail and drop it
                frozen.append(runner)
        try:
            yield
        finally:
            for runner in frozen:
                with runner.state, contextlib.suppress(Exception):
                    if not runner.greeted:
                        runner.run.containment.thaw()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            waiting, self.runners = self.runners, []
        for runner in waiting:
            with contextlib.suppress(Exception):
                runner.close()
        for companion in self.companions.values():
            with contextlib.suppress(Exception):
                companion.close()
        self.companions = {}
        for scratch in self._companion_scratch:
            scratch.close()
        with contextlib.suppress(Exception):
            self.arena.close()
            self.dev.close()


def bench_key(
    spec: ExerciseSpec, device: str, slot: int, peaks: dict[str, Any], compare: bool
) -> tuple[Any, ...]:
    """A new exercise version, a new calibration or another slot needs another bench."""
    return (spec.slug, spec.content_hash, device, slot, peaks.get("measured_at"), compare)


_benches: dict[int, Bench] = {}
_benches_lock = threading.Lock()


def bench_for(
    spec: ExerciseSpec, device: str, slot: int, peaks: dict[str, Any], compare: bool
) -> Bench:
    """This slot's bench for the exercise: kept from earlier gradings, or set up now."""
    key = bench_key(spec, device, slot, peaks, compare)
    with _benches_lock:
        bench = _benches.pop(slot, None) if enabled() else None
    if bench is not None and bench.key == key and bench.healthy:
        return bench
    if bench is not None:
        bench.close()  # one exercise's sandboxes per slot: a switch frees the memory
    return Bench(spec, device, slot, peaks, compare)


def release(bench: Bench) -> None:
    """After a grading: keep the bench and top up its runners, or close it."""
    if not enabled() or not bench.healthy:
        bench.close()
        return
    with _benches_lock:
        _benches[bench.slot] = bench
    bench.refill()


def close_all() -> None:
    """Stop every warm sandbox of this process (tests; a worker shutting down)."""
    with _benches_lock:
        benches = list(_benches.values())
        _benches.clear()
    for bench in benches:
        bench.close()
