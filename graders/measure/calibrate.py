"""Measure and cache the peak bandwidth and FLOP/s of a device, and the cache flush size.

Peaks are measured (never only looked up) because the roofline must describe the
machine the submission actually ran on. The measurement is made the way gradings are
timed: inputs of the timed vector-add size in private memory with huge pages (where the
harness's input region lives), in a single-threaded child pinned to the grading core, the
cache flushed before each call with the flush size measured on that core
(:mod:`graders.measure.flush_size`). Datasheet figures are attached for comparison only.

A single measurement can be wrong (one taken while the machine was busy read 9% high
and skewed every grading after it), so each device keeps a bounded history in
``$GRADERS_CACHE_DIR/peaks.json`` (default ``~/.cache/gpu-courseware``), keyed by device
name, torch version and thread count. The peak used is the median of the recent
history (the CPU's FLOP/s: the highest recent one, graders/measure/matmul_peak.py); the
device is measured again when its latest measurement is older than
``$GRADERS_RECALIBRATE_DAYS`` (default 7) or more than 3% off that median, and a
measurement that disagrees is repeated a few times, keeping only what agrees.

One calibration of a device kind runs at a time, behind a file lock in the cache folder
(``calibration-<kind>.lock``): on one GPU, parallel calibrations would each hold a pool of
device memory and time each other's kernels. A process that waited for the lock reads the
store again and uses what the other one measured. A calibration that raises, or whose process
dies holding the lock (its ``running`` mark is still there for the next holder to find), is
recorded as failed: later gradings fail at once with its error instead of calibrating again,
until ``peaks(device, refresh=True)`` (``python -m graders calibrate --refresh``) retries it,
or ``$GRADERS_CALIBRATION_RETRY_S`` (default one hour) has passed.
"""

from __future__ import annotations

import calendar
import contextlib
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from graders.errors import GraderError
from graders.locations import REPO_ROOT, cache_dir
from graders.measure import matmul_peak
from graders.sandbox.launch import pick_core

# The working set is that of vector-add's timed size: the figure the peak is a fraction of.
TIMED_EXERCISE = REPO_ROOT / "exercises" / "ch15" / "vector-add"
FALLBACK_N = {"cpu": 1 << 24, "cuda": 1 << 28}
# (substring of the device name, memory GB/s, dense fp32 FLOP/s non-tensor-core)
DATASHEETS: tuple[tuple[str, float, float], ...] = (
    ("H200", 4800.0, 67e12),
    ("H100 PCIe", 2000.0, 51e12),
    ("H100", 3350.0, 67e12),
    ("A100-SXM4-80GB", 2039.0, 19.5e12),
    ("A100 80GB PCIe", 1935.0, 19.5e12),
    ("A100", 1555.0, 19.5e12),
)
HISTORY_LIMIT = 20  # measurements kept per device
RECENT = 5  # the peak is the median of this many latest measurements
TOLERANCE = 0.03  # a measurement this far from the median is re-measured
MAX_ATTEMPTS = 4  # measurements per calibration round when they keep disagreeing
DEFAULT_MAX_AGE_DAYS = 7.0
DEFAULT_RETRY_S = 3600.0  # a failed calibration is tried again after this, or on refresh
LOCK_WAIT_S = 900.0  # the longest a grading waits for another process's calibration
TRIAD_RUNS = 8
FORMAT = 2
# The kind of memory the inputs lived in; a measurement on another kind (the shared memory
# gradings used before) is kept for the record but no longer counts towards the peak.
MEMORY = "private"

Measurement = dict[str, Any]
MeasureFn = Callable[[str, int], Measurement]


def max_age_s() -> float:
    """Re-calibration period: ``$GRADERS_RECALIBRATE_DAYS`` days (default 7)."""
    try:
        days = float(os.environ.get("GRADERS_RECALIBRATE_DAYS", DEFAULT_MAX_AGE_DAYS))
    except ValueError:
        days = DEFAULT_MAX_AGE_DAYS
    return days * 86400.0


def device_name(device: str) -> str:
    if device == "cpu":
        with contextlib.suppress(OSError):
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
        return "unknown-cpu"
    import torch

    if not torch.cuda.is_available():
        raise GraderError("CUDA was requested but torch.cuda.is_available() is False here")
    return torch.cuda.get_device_name(0)


def datasheet(name: str) -> tuple[float, float] | None:
    for key, gbps, flops in DATASHEETS:
        if key in name:
            return gbps, flops
    return None


def timed_elements(device: str) -> int:
    """vector-add's timed ``n`` on ``device``'s kind (a fixed fallback without the spec)."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    with contextlib.suppress(Exception):
        from graders.spec.exercise import load_exercise

        return int(load_exercise(TIMED_EXERCISE).sizes[kind].timed["n"])
    return FALLBACK_N[kind]


# ---------------------------------------------------------------- the stored history


def upgrade(stored: dict[str, Any]) -> dict[str, Any]:
    """One device's stored value in the current format (old files held one measurement).

    An old measurement is kept for the record but marked ``legacy``: it was taken on
    private memory without a flush, so it does not count towards the peak.
    """
    if "history" in stored:
        return stored
    timestamp = 0.0
    with contextlib.suppress(KeyError, TypeError, ValueError):
        parsed = time.strptime(stored["measured_at"], "%Y-%m-%dT%H:%M:%SZ")
        timestamp = float(calendar.timegm(parsed))
    entry = {
        "timestamp": timestamp,
        "measured_at": stored.get("measured_at"),
        "gbps": stored.get("gbps"),
        "flops_per_s": stored.get("flops_per_s"),
        "flush_bytes": None,
        "load_average_1m": None,
        "method": stored.get("method"),
        "device_name": stored.get("device_name"),
        "legacy": True,
    }
    return {"format": FORMAT, "history": [entry]}


def current(history: list[Measurement]) -> list[Measurement]:
    """The measurements taken with today's method (those a peak is computed from)."""
    return [
        m for m in history if not m.get("legacy") and m.get("gbps") and m.get("memory") == MEMORY
    ]


def _recent_median(history: list[Measurement], field: str) -> float:
    return float(statistics.median(m[field] for m in current(history)[-RECENT:]))


def _off(value: float, reference: float) -> float:
    return abs(value - reference) / reference if reference else float("inf")


def due(history: list[Measurement], now: float, max_age: float) -> str | None:
    """Why the device must be measured before its peak is used, or None."""
    usable = current(history)
    if not usable:
        return "no measurement with the current method"
    latest = usable[-1]
    if now - float(latest.get("timestamp") or 0.0) > max_age:
        return f"latest measurement older than {max_age / 86400:g} days"
    if _off(latest["gbps"], _recent_median(history, "gbps")) > TOLERANCE:
        return "latest measurement is more than 3% off the history's median"
    return None


def remeasure(
    history: list[Measurement], take: Callable[[], Measurement], *, confirm_first: bool = True
) -> list[Measurement]:
    """``history`` plus a calibration round's measurements that agree, bounded.

    Measures until the latest measurement is within 3% of the recent median (counting
    the round's own measurements, so a machine that really changed wins after a few),
    at most ``MAX_ATTEMPTS`` times; then keeps the round's measurements that agree with
    the final median (all of them when none does: the next use measures again).

    ``confirm_first=False``: with no history, one measurement is kept as it is. A GPU's
    measurement is five sandboxed gradings, too long to take twice inside a grading's
    setup; a wrong one is caught later, when the next measurement is more than 3% off.
    """
    if not confirm_first and not current(history):
        return [*history, take()][-HISTORY_LIMIT:]
    fresh: list[Measurement] = []
    for _ in range(MAX_ATTEMPTS):
        fresh.append(take())
        pool = history + fresh
        if len(current(pool)) >= 2 and (
            _off(fresh[-1]["gbps"], _recent_median(pool, "gbps")) <= TOLERANCE
        ):
            break
    reference = _recent_median(history + fresh, "gbps")
    agreeing = [m for m in fresh if _off(m["gbps"], reference) <= TOLERANCE]
    return (history + (agreeing or fresh))[-HISTORY_LIMIT:]


def _flops_peak(history: list[Measurement]) -> float:
    """The highest recent FLOP/s of the measurements that timed the matmul by its time on the
    core (graders/measure/matmul_peak.py): such a figure reads low when the machine is busy,
    never high, so the highest is the nearest to the peak. Without any (earlier CPU
    measurements, which counted a wait for the core as the matmul's, and every GPU one), the
    recent median as before."""
    on_core = [m for m in current(history) if m.get("flops_timer") == matmul_peak.TIMER]
    if on_core:
        return float(max(m["flops_per_s"] for m in on_core[-RECENT:]))
    return _recent_median(history, "flops_per_s")


def summary(device: str, name: str, history: list[Measurement]) -> dict[str, Any]:
    """What callers read: the recent medians, plus how they were obtained."""
    usable = current(history)
    latest = usable[-1]
    flushes = [m["flush_bytes"] for m in usable[-RECENT:] if m.get("flush_bytes")]
    shown = name if device == "cpu" else latest.get("device_name") or name
    sheet = datasheet(shown)
    return {
        "gbps": _recent_median(history, "gbps"),
        "flops_per_s": _flops_peak(history),
        # The largest recent flush: a flush too small lets a warm cache inflate a grading,
        # one too large only costs time (and is capped).
        "flush_bytes": max(flushes) if flushes else None,
        "method": f"{latest.get('method')}; median of the latest {min(len(usable), RECENT)}",
        "datasheet_gbps": sheet[0] if sheet else None,
        "datasheet_flops_per_s": sheet[1] if sheet else None,
        "device_name": shown,
        "measured_at": latest.get("measured_at"),
        "history_gbps": [round(m["gbps"], 3) for m in usable[-RECENT:]],
        # GPUs only (graders/measure/gpu_calibration.py): the empty window a CUDA grading
        # subtracts, which sizes its calls per window, and the tensor-core peaks.
        **{
            field: _recent_median(history, field)
            for field in ("window_s", "flops_per_s_tf32", "flops_per_s_bf16")
            if all(m.get(field) for m in usable[-RECENT:])
        },
    }


def _cache_key(device: str, name: str) -> str:
    import torch

    return f"{device}|{name}|threads=1|torch={torch.__version__}"


def _read_store(path: Path) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(path.read_text())
        if isinstance(loaded, dict):
            return loaded
    return {}


def _write_store(path: Path, store: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(store, indent=2, sort_keys=True))
        tmp.replace(path)  # atomic: concurrent workers never see half a file


class CalibrationFailed(GraderError):
    """The device's last calibration failed (or its process died); not retried yet."""


def retry_after_s() -> float:
    """How long a failed calibration stands: ``$GRADERS_CALIBRATION_RETRY_S`` (default 1 h)."""
    try:
        return float(os.environ.get("GRADERS_CALIBRATION_RETRY_S", DEFAULT_RETRY_S))
    except ValueError:
        return DEFAULT_RETRY_S


def _kind(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"


# The file lock is per open file, so a second flock in the same process would wait for the
# first: a thread that already holds its kind's lock re-enters it (a CPU device made inside a
# calibration asks for the flush size, which is read through peaks), other threads wait.
_THREAD_LOCKS = {"cpu": threading.RLock(), "cuda": threading.RLock()}
_held = threading.local()


@contextlib.contextmanager
def calibration_lock(device: str, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Held while a device kind is calibrated: one calibration at a time on the machine."""
    kind = _kind(device)
    if not _THREAD_LOCKS[kind].acquire(timeout=max(wait_s, 0.0)):
        raise GraderError(f"another thread's {kind} calibration held the lock past {wait_s:g} s")
    depth: dict[str, int] = getattr(_held, "depth", {})
    _held.depth = depth
    try:
        if depth.get(kind):
            depth[kind] += 1
            try:
                yield
            finally:
                depth[kind] -= 1
            return
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / f"calibration-{kind}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise GraderError(
                            f"another process's {kind} calibration held {folder}/"
                            f"calibration-{kind}.lock past {wait_s:g} s"
                        ) from None
                    time.sleep(0.2)
            depth[kind] = 1
            try:
                yield
            finally:
                depth[kind] = 0
        finally:
            os.close(fd)  # releases the flock (the kernel does too if the process dies)
    finally:
        _THREAD_LOCKS[kind].release()


def _load_state(path: Path, key: str) -> dict[str, Any]:
    stored = _read_store(path).get(key)
    state = upgrade(stored) if isinstance(stored, dict) else {"format": FORMAT, "history": []}
    return dict(state)


def _save_state(path: Path, key: str, state: dict[str, Any]) -> None:
    store = _read_store(path)  # another device's calibration may have written meanwhile
    store[key] = state
    _write_store(path, store)


def failure_standing(state: dict[str, Any], now: float) -> dict[str, Any] | None:
    """The recorded failure that still stands (not yet ``retry_after_s`` old), or None."""
    failed = state.get("failed")
    if not isinstance(failed, dict):
        return None
    if now - float(failed.get("timestamp") or 0.0) > retry_after_s():
        return None
    return failed


def _stamp(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def _raise_failed(device: str, failed: dict[str, Any]) -> None:
    raise CalibrationFailed(
        f"the {_kind(device)} calibration failed at {failed.get('at')} and is not tried again "
        f"in every grading: {failed.get('error')}. Fix the cause, then run `python -m graders "
        f"calibrate --device {_kind(device)} --refresh` (or wait {retry_after_s():g} s)"
    )


def peaks(
    device: str = "cpu",
    refresh: bool = False,
    slot: int | None = None,
    *,
    measure: MeasureFn | None = None,
    now: Callable[[], float] = time.time,
    lock_wait_s: float = LOCK_WAIT_S,
) -> dict[str, Any]:
    """{"gbps", "flops_per_s", "flush_bytes", "method", "datasheet_gbps", "device_name", ...}.

    ``slot``: the grading slot already held by the caller; None acquires one, so a
    calibration never runs on a core where a grading is being timed. ``refresh``
    measures now whatever the history says (and retries a failed calibration).
    ``measure(device, slot)`` and ``now`` replace the real measurement and clock (tests).
    Raises :class:`CalibrationFailed` while a recorded failure stands.
    """
    if slot is None:
        from graders.sandbox.slots import acquire

        with acquire() as held:
            return peaks(device, refresh, held, measure=measure, now=now, lock_wait_s=lock_wait_s)
    name = device_name(device)
    key = _cache_key(device, name)
    path = cache_dir() / "peaks.json"
    state = _load_state(path, key)
    history: list[Measurement] = list(state["history"])
    if not refresh:  # the common case, without the lock: a history that is good enough
        failed = failure_standing(state, now())
        if failed is not None:
            _raise_failed(device, failed)
        if not state.get("running") and not due(history, now(), max_age_s()):
            return summary(device, name, history)
    with calibration_lock(device, lock_wait_s):
        state = _load_state(path, key)  # what another process did while this one waited
        history = list(state["history"])
        running = state.pop("running", None)
        if isinstance(running, dict):  # its process died holding the lock: it failed
            state["failed"] = {
                "at": _stamp(now()),
                "timestamp": now(),
                "error": f"the calibration started at {running.get('at')} by process "
                f"{running.get('pid')} never finished (killed, or it crashed)",
            }
            _save_state(path, key, state)
        if not refresh:
            failed = failure_standing(state, now())
            if failed is not None:
                _raise_failed(device, failed)
            if not due(history, now(), max_age_s()):
                return summary(device, name, history)
        state.pop("failed", None)
        state["running"] = {"pid": os.getpid(), "at": _stamp(now())}
        _save_state(path, key, state)
        probe = measure or _measure

        def take() -> Measurement:
            load = os.getloadavg()[0]  # how busy the machine was: read it with the figure
            measured = probe(device, slot)
            stamp = now()
            return {
                **measured,
                "memory": MEMORY,
                "timestamp": stamp,
                "measured_at": _stamp(stamp),
                "load_average_1m": load,
            }

        try:
            history = remeasure(history, take, confirm_first=_kind(device) == "cpu")
        except BaseException as exc:  # recorded, so that the next grading does not retry it
            state.pop("running", None)
            state["failed"] = {
                "at": _stamp(now()),
                "timestamp": now(),
                "error": f"{type(exc).__name__}: {exc}"[:2000],
            }
            _save_state(path, key, state)
            raise
        _save_state(path, key, {"format": FORMAT, "history": history})
    return summary(device, name, history)


def flush_bytes(
    device: str = "cpu", slot: int | None = None, *, measure: MeasureFn | None = None
) -> int:
    """Bytes to write before each timed call: measured with the peaks, cached with them."""
    value = peaks(device, slot=slot, measure=measure).get("flush_bytes")
    if value:
        return int(value)
    from graders.measure.flush_size import measure_flush_bytes

    return measure_flush_bytes(device)


# ---------------------------------------------------------------- the measurement


def _measure(device: str, slot: int) -> Measurement:
    """One measurement in grading conditions. On a GPU: trusted kernels graded through the
    sandbox like submissions (graders/measure/gpu_calibration.py). On the CPU: a child
    process pinned to the grading core, with the sandbox's environment (huge pages for large
    tensors, one thread), as in a grading."""
    if device.startswith("cuda"):
        from graders.measure import gpu_calibration

        try:
            return gpu_calibration.measure(slot, device_name(device))
        except gpu_calibration.CalibrationFailed as exc:
            raise GraderError(f"peak calibration failed: {exc}") from None
    from graders.sandbox.launch import sandbox_env

    n = timed_elements(device)
    shape = matmul_peak.timed_shape()
    command = [
        sys.executable,
        "-I",
        "-c",
        f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); "
        f"from graders.measure.calibrate import probe_main; probe_main({n}, {shape})",
    ]
    core = pick_core(slot)
    if core is not None and shutil.which("taskset"):
        command = ["taskset", "-c", str(core), *command]
    env = sandbox_env(str(cache_dir()), device)
    env["HOME"] = os.environ.get("HOME", "/tmp")
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired as exc:
        raise GraderError("peak calibration took longer than 300 s") from exc
    if result.returncode != 0:
        raise GraderError(f"peak calibration failed: {result.stderr[-2000:]}")
    measured: Measurement = json.loads(result.stdout.strip().splitlines()[-1])
    return measured


def probe_main(n: int, matmul_shape: tuple[int, int, int] = matmul_peak.FALLBACK_SHAPE) -> None:
    """Child side (CPU): flush size, triad ``a = b + 3 c`` and an fp32 matmul; one JSON line.

    Bandwidth counts 3 x 4 bytes per element (two reads, one write) and is the best of
    ``TRIAD_RUNS`` calls, each after a cache flush, as STREAM reports a best run. The matmul
    is the matmul exercise's timed size, timed by each call's time on the core
    (:mod:`graders.measure.matmul_peak`).
    """
    import torch

    from graders.harness.bus_canary import triad_best_s
    from graders.measure.flush_size import CacheFlusher, measure_flush_bytes

    torch.set_num_threads(1)  # the sandbox runs submissions on one thread
    b = torch.full((n,), 1.0)
    c = torch.full((n,), 2.0)
    nbytes = measure_flush_bytes("cpu")
    flusher = CacheFlusher(nbytes, "cpu")
    a = torch.zeros(n)
    # The same code as the memory-bus canary a grading runs, so the two figures compare.
    triad_s = triad_best_s(b, c, a, flusher, TRIAD_RUNS)
    matmul = matmul_peak.measure(flusher, matmul_shape)
    print(
        json.dumps(
            {
                "device_name": "cpu",
                "gbps": 3 * n * 4 / triad_s / 1e9,
                "flops_per_s": matmul["flops_per_s"],
                "flops_timer": matmul["flops_timer"],
                "flush_bytes": nbytes,
                "method": f"triad a=b+s*c over 3x{n * 4 >> 20} MiB (private memory, huge pages), "
                f"{nbytes >> 20} MiB flush before each call, best of {TRIAD_RUNS}, "
                f"perf_counter_ns; {matmul['matmul_method']}; 1 thread",
            }
        )
    )
