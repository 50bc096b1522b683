"""The CUDA device's own logic against a double of the driver (tests/graders/cuda_double.py).

What a GPU machine would answer, the double answers as the driver documents it: a process
lock that times out, one that is refused, one that leaves its target locked, device memory
that runs out, and a sandbox's pool that runs out. Each case is what issue 37's reading found
the CUDA path would get wrong on its first run.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from graders.devices import base, cuda_lock
from graders.harness import cuda_memory
from graders.harness import main as harness_main
from tests.graders.cuda_double import (
    GRANULARITY,
    LOCKED,
    NOT_SUPPORTED,
    RUNNING,
    TIMEOUT,
    DriverDouble,
)

PID = 4242
GIB = 1 << 30


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test is a worker process of its own: nothing learnt about the lock, no driver."""
    monkeypatch.delenv(cuda_lock.LOCK_SWITCH, raising=False)
    cuda_lock.LOCK_PROBE.reset()
    yield
    cuda_lock.LOCK_PROBE.reset()
    cuda_memory.use_driver(None)


def _driver(**options: object) -> DriverDouble:
    double = DriverDouble(**options)  # type: ignore[arg-type]
    cuda_memory.use_driver(double.library())
    return double


# ---------------------------------------------------------------- the process lock


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        ("timeout", "timed out after 2 s"),
        ("not_supported", "CUDA_ERROR_NOT_SUPPORTED"),
        ("not_permitted", "CUDA_ERROR_NOT_PERMITTED"),
        ("missing", "has no cuCheckpointProcessLock"),
    ],
)
def test_a_first_lock_that_fails_falls_back_to_the_harness_sync_once_per_process(
    behaviour: str, said: str
) -> None:
    double = _driver(lock=behaviour)
    first, second = cuda_lock.DriverLock(), cuda_lock.DriverLock()
    first.settle(PID, timeout_s=60.0)  # the whole setup budget left: the lock gets 2 s of it
    assert double.lock_calls == ([] if behaviour == "missing" else [(PID, 2000)])
    assert double.states.get(PID, RUNNING) == RUNNING  # not left locked: the sandbox goes on
    first.resume(PID)  # nothing to unlock
    assert double.unlock_calls == []
    # Another bench of the same worker (its own device object) does not try again.
    second.settle(PID + 1, timeout_s=60.0)
    assert len(double.lock_calls) == (0 if behaviour == "missing" else 1)
    witness = cuda_lock.completion_witness()
    assert witness.kind == "harness_sync"
    assert said in witness.note


def test_a_refused_lock_that_left_its_target_locked_is_undone() -> None:
    double = _driver(lock="refused_locked")
    cuda_lock.DriverLock().settle(PID, timeout_s=30.0)
    assert double.unlock_calls == [PID]
    assert double.states[PID] == RUNNING
    assert cuda_lock.completion_witness().kind == "harness_sync"


def test_a_working_lock_is_the_witness_and_a_later_timeout_is_the_sandboxs() -> None:
    double = _driver(lock="works", lock_after_first="timeout")
    lock = cuda_lock.DriverLock()
    lock.settle(PID, timeout_s=30.0)
    assert double.states[PID] == LOCKED
    assert cuda_lock.completion_witness().kind == "driver_lock"
    lock.resume(PID)
    assert double.states[PID] == RUNNING and double.unlock_calls == [PID]
    # Once it worked, the lock gets the window's whole budget, and a timeout is the
    # submission's kernel still running: its verdict, not a fallback.
    with pytest.raises(base.SettleFailed) as failed:
        lock.settle(PID, timeout_s=7.5)
    assert failed.value.timed_out
    assert double.lock_calls[-1] == (PID, 7500)
    assert "CUDA_ERROR_TIMEOUT" in str(failed.value)
    assert cuda_lock.completion_witness().kind == "driver_lock"


def test_a_lock_refused_after_it_worked_is_an_error_not_a_timeout() -> None:
    _driver(lock="works", lock_after_first="not_supported")
    lock = cuda_lock.DriverLock()
    lock.settle(PID, timeout_s=30.0)
    lock.resume(PID)
    with pytest.raises(base.SettleFailed) as failed:
        lock.settle(PID, timeout_s=30.0)
    assert not failed.value.timed_out
    assert f"({NOT_SUPPORTED})" in str(failed.value)


def test_the_switch_turns_the_lock_off(monkeypatch: pytest.MonkeyPatch) -> None:
    double = _driver(lock="works")
    monkeypatch.setenv(cuda_lock.LOCK_SWITCH, "0")
    cuda_lock.DriverLock().settle(PID, timeout_s=30.0)
    assert double.lock_calls == []
    witness = cuda_lock.completion_witness()
    assert witness.kind == "harness_sync" and "GRADERS_CUDA_LOCK=0" in witness.note


def test_a_lock_error_carries_the_drivers_code() -> None:
    _driver(lock="timeout")
    with pytest.raises(cuda_memory.CudaMemoryError) as failed:
        cuda_memory.lock_process(PID, 100)
    assert failed.value.code == TIMEOUT and failed.value.timed_out


# ---------------------------------------------------------------- shareable memory


def test_memory_is_created_exported_imported_and_released() -> None:
    double = _driver(capacity=8 * GRANULARITY)
    made = cuda_memory.SharedMemory.create(GRANULARITY + 1, 0)  # rounded up to two
    assert made.size == 2 * GRANULARITY and made.fd is not None and double.used == made.size
    seen = cuda_memory.SharedMemory.open(made.fd, made.size, 0)
    assert seen.handle == made.handle and seen.pointer != made.pointer  # its own mapping
    seen.close()
    made.close()
    assert made.fd is None and double.mapped == {} and double.reserved == {}


def test_device_memory_that_runs_out_is_the_drivers_out_of_memory() -> None:
    double = _driver(capacity=2 * GRANULARITY)
    held = cuda_memory.SharedMemory.create(2 * GRANULARITY, 0)
    with pytest.raises(cuda_memory.CudaMemoryError, match="CUDA_ERROR_OUT_OF_MEMORY") as failed:
        cuda_memory.SharedMemory.create(1, 0)
    assert failed.value.code == 2
    held.close()
    assert double.used == 0 and double.handles == {}  # released: nothing leaked


def test_an_import_the_driver_refuses_is_said() -> None:
    _driver(import_refused=True)
    made = cuda_memory.SharedMemory.create(1, 0)
    assert made.fd is not None
    with pytest.raises(cuda_memory.CudaMemoryError, match="NOT_PERMITTED"):
        cuda_memory.SharedMemory.open(made.fd, made.size, 0)
    made.close()


# ---------------------------------------------------------------- the sandbox's pool


def test_a_pool_that_runs_out_gives_the_student_an_out_of_memory_error() -> None:
    pool = cuda_memory.Pool(base=1 << 40, size=GIB)
    first = pool.allocate(GIB // 2)
    assert first == 1 << 40
    assert pool.allocate(GIB) == 0  # what torch gets: a null pointer it does not check
    with pytest.raises(cuda_memory.OutOfMemoryError) as refused:
        pool.check()
    message = str(refused.value)
    assert "used 0.50 of the 1.00 GiB GPU memory limit" in message
    assert "asked for 1.00 GiB more" in message
    pool.check()  # reported once
    pool.release(first)
    assert pool.allocate(GIB) == 1 << 40


def test_a_scattered_pool_says_the_memory_is_there_in_pieces() -> None:
    pool = cuda_memory.Pool(base=0x1000_0000, size=4 * cuda_memory.ALIGN)
    blocks = [pool.allocate(cuda_memory.ALIGN) for _ in range(4)]
    pool.release(blocks[0])
    pool.release(blocks[2])
    assert pool.allocate(2 * cuda_memory.ALIGN) == 0
    with pytest.raises(cuda_memory.OutOfMemoryError, match="in pieces of at most"):
        pool.check()


def test_the_harness_reports_the_refusal_not_the_fault_it_caused() -> None:
    """The kernel that got the null pointer faults (an illegal address), and the harness
    reports the allocation the pool refused, which is what the student can fix."""
    pool = cuda_memory.Pool(base=1 << 40, size=GIB)
    cuda_memory.register_pool(pool)
    try:
        assert pool.allocate(2 * GIB) == 0
        fault = RuntimeError("CUDA error: an illegal memory access was encountered")
        own = harness_main.own_error(fault)
        assert isinstance(own, cuda_memory.OutOfMemoryError)
        described = harness_main.describe_exception(own, "/scratch/in/submission.py")
        assert described["type"] == "OutOfMemoryError"
        assert "used 0.00 of the 1.00 GiB GPU memory limit" in described["message"]
        # Without a refusal, the error stands as raised.
        other = ValueError("shapes do not match")
        assert harness_main.own_error(other) is other
    finally:
        cuda_memory.register_pool(None)


def test_memory_fds_are_real_descriptors() -> None:
    _driver()
    made = cuda_memory.SharedMemory.create(1, 0)
    assert made.fd is not None
    os.fstat(made.fd)  # the engine passes it to a sandbox: it must be a descriptor
    made.close()


def test_a_lock_under_which_the_trusted_side_blocks_is_given_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reported for processes that share memory: the trusted side's own work on it waits
    while a sharer is locked. Under the first lock the trusted side touches the memory; the
    double's touch waits for the unlock, so the lock is undone and never used again."""
    double = _driver(lock="works")
    released = threading.Event()

    def touch_blocked_until_unlocked() -> None:
        while double.states.get(PID) == LOCKED:
            time.sleep(0.01)
        released.set()

    monkeypatch.setattr(cuda_lock, "SHARER_WAIT_S", 0.2)
    lock = cuda_lock.DriverLock(touch=touch_blocked_until_unlocked)
    lock.settle(PID, timeout_s=30.0)
    assert double.unlock_calls == [PID] and double.states[PID] == RUNNING
    assert released.wait(10.0)  # the touch finished once unlocked
    witness = cuda_lock.completion_witness()
    assert witness.kind == "harness_sync" and "blocked" in witness.note
    lock.resume(PID)
    assert double.unlock_calls == [PID]  # nothing left locked to undo


def test_a_lock_under_which_the_trusted_side_works_is_kept() -> None:
    double = _driver(lock="works")
    touched: list[int] = []
    lock = cuda_lock.DriverLock(touch=lambda: touched.append(double.states[PID]))
    lock.settle(PID, timeout_s=30.0)
    assert touched == [LOCKED]  # touched while the sandbox was locked
    assert double.states[PID] == LOCKED and lock.locked == {PID}
    assert cuda_lock.completion_witness().kind == "driver_lock"
