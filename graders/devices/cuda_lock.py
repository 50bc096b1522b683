"""The CUDA device's completion witness: the driver's process lock, or the harness's sync.

``cuCheckpointProcessLock`` blocks a process's CUDA calls and returns once all the work it
submitted has finished: the trusted side's proof that a window closed on finished GPU work,
which the submission cannot fake. It is new (drivers of CUDA 12.8 and later), refused by some
runtimes (gVisor), reported to hang for processes that share memory by IPC (supported only in
later drivers), and in other setups a failed lock has damaged its target. So:

- whether it works is learnt once per process (:data:`LOCK_PROBE`), from the first window of
  the first sandbox (an empty call, before any student code exists) or from gpu-check's
  hardware probe, with a 2 s timeout: that window's GPU work is microseconds, so 2 s is a hang;
- a lock that failed or timed out is never tried again in this process, and the process it
  was tried on is unlocked where the driver left it locked, so the grading goes on;
- under the first lock that works, the trusted side touches the memory it shares with the
  sandbox: if that blocks, the lock is given up the same way (the trusted side reads outputs
  and draws inputs while a sandbox stays locked);
- ``GRADERS_CUDA_LOCK=0`` turns it off;
- without it the harness's own device synchronise is the witness, which the report states
  (``device.sandbox.device.gpu_completion_witness``: ``driver_lock`` or ``harness_sync``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

from graders.devices.base import CompletionWitness, SettleFailed
from graders.harness import cuda_memory

LOCK_SWITCH = "GRADERS_CUDA_LOCK"  # "0" (or off/no/false): never the lock, the harness's sync
FIRST_LOCK_TIMEOUT_S = 2.0
SHARER_WAIT_S = 2.0  # a read of a few bytes takes microseconds: 2 s is blocked


class LockProbe:
    """Whether the driver's process lock works for this process's sandboxes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.works: bool | None = None  # None: not tried yet in this process
        self.reason: str | None = None  # why not, once it failed

    def switched_off(self) -> str | None:
        value = os.environ.get(LOCK_SWITCH, "").strip().lower()
        if value in ("0", "off", "no", "false"):
            return f"{LOCK_SWITCH}={value} turns it off"
        return None

    def unavailable(self) -> str | None:
        """Why the lock is not used (None: it is, or will be tried)."""
        return self.switched_off() or (self.reason if self.works is False else None)

    def record(self, works: bool, reason: str | None = None) -> None:
        with self.lock:
            self.works, self.reason = works, (None if works else reason)

    def reset(self) -> None:
        """Forget what was learnt (a test, or a driver reloaded under a long-lived worker)."""
        self.record(False)
        with self.lock:
            self.works = None


LOCK_PROBE = LockProbe()


def try_first_lock(pid: int, timeout_s: float = FIRST_LOCK_TIMEOUT_S) -> float | None:
    """Lock ``pid`` once with a short timeout and record in :data:`LOCK_PROBE` whether that
    worked: the seconds it took (``pid`` is then locked), or None. A failed lock never fails
    the caller: where the driver left ``pid`` locked it is unlocked."""
    began = time.monotonic()
    try:
        cuda_memory.lock_process(pid, int(max(timeout_s, 0.001) * 1000))
    except cuda_memory.CudaMemoryError as exc:
        if cuda_memory.process_state(pid) == cuda_memory.PROCESS_LOCKED:
            with contextlib.suppress(cuda_memory.CudaMemoryError):
                cuda_memory.unlock_process(pid)
        LOCK_PROBE.record(
            False, f"it timed out after {timeout_s:g} s" if exc.timed_out else str(exc)
        )
        return None
    LOCK_PROBE.record(True)
    return time.monotonic() - began


def sharer_blocks(pid: int, touch: Callable[[], None], wait_s: float = SHARER_WAIT_S) -> bool:
    """With ``pid`` locked, whether ``touch`` (the trusted side's own work on the memory it
    shares with ``pid``) fails to finish within ``wait_s``. If it blocks, ``pid`` is unlocked
    (which lets ``touch`` finish) and the lock recorded as unusable: the trusted side reads
    outputs and draws inputs while a sandbox stays locked, and would hang there."""
    done = threading.Event()

    def run() -> None:
        try:
            touch()
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name="lock-sharer-check").start()
    if done.wait(wait_s):
        return False
    with contextlib.suppress(cuda_memory.CudaMemoryError):
        cuda_memory.unlock_process(pid)
    done.wait(wait_s)
    LOCK_PROBE.record(False, "the trusted side's own GPU work blocked while a sandbox was locked")
    return True


class DriverLock:
    """The CUDA device's settle and resume: the sandbox's process locked after ``done``,
    unlocked after the next thaw. ``touch``: a little of the trusted side's own work on the
    memory it shares with the sandboxes, tried once under the first lock (see
    :func:`sharer_blocks`)."""

    def __init__(self, touch: Callable[[], None] | None = None) -> None:
        self.locked: set[int] = set()  # pids locked by the last settle
        self.touch = touch

    def settle(self, pid: int, timeout_s: float) -> None:
        """Returns once all the work ``pid`` submitted has finished, where the lock works;
        at once where it does not (the harness synchronised before ``done``). After the lock
        worked in this process, a refusal or a timeout is the sandbox's doing: SettleFailed."""
        if LOCK_PROBE.unavailable() is not None:
            return
        if LOCK_PROBE.works is None:
            if try_first_lock(pid, min(FIRST_LOCK_TIMEOUT_S, timeout_s)) is None:
                return
            if self.touch is not None and sharer_blocks(pid, self.touch):
                return  # unlocked again: the harness's synchronise from now on
            self.locked.add(pid)
            return
        try:
            cuda_memory.lock_process(pid, int(max(timeout_s, 0.001) * 1000))
        except cuda_memory.CudaMemoryError as exc:
            raise SettleFailed(
                f"its GPU work could not be confirmed finished ({exc})", exc.timed_out
            ) from None
        self.locked.add(pid)

    def resume(self, pid: int) -> None:
        if pid in self.locked:
            self.locked.discard(pid)
            try:
                cuda_memory.unlock_process(pid)
            except cuda_memory.CudaMemoryError as exc:
                raise SettleFailed(f"its CUDA calls could not be resumed ({exc})") from None

    def forget(self, pid: int) -> None:
        # Its pid may be reused by a later sandbox, which no lock of ours holds.
        self.locked.discard(pid)


def completion_witness() -> CompletionWitness:
    """The witness this process's windows close on: the driver's lock unless it is switched
    off or failed, else the harness's synchronise."""
    why = LOCK_PROBE.unavailable()
    if why is None:
        return CompletionWitness(
            "driver_lock",
            "the window closes after the driver confirmed that all the GPU work the "
            "sandbox submitted had finished",
        )
    return CompletionWitness(
        "harness_sync",
        f"the driver's process lock is not used here ({why}); the window closes on the "
        "harness's own device synchronise, which a submission could patch",
    )
