"""Sandbox-side driver: import the submission, then call it when the trusted side says go.

This process is the student's: anything in it can be patched, so it is trusted with nothing
that earns a point. The trusted side owns the inputs, the clock and the outputs:

- inputs live in a region of this process's private memory, reserved before student code
  exists; the trusted side draws them from its secret seed and copies them in while this
  process is frozen, and flushes the cache; ``go`` only names where in the region each
  input lies, so no seed ever enters this process;
- each call is timed from outside, from the thaw before ``go`` to the freeze after ``done``;
  the time measured here is sent as a second opinion that can only cost points;
- ``done`` describes where the outputs lie; the trusted side reads them while the whole
  sandbox is frozen: from this process's memory on the CPU; on CUDA from the device memory
  pool this process's torch allocates from, which the trusted side created and has mapped
  too (no copy to the host, nothing but the calls and a synchronise in the timed window).
- on CUDA the inputs are device memory the trusted side allocated and drew itself; this
  process maps it (``inputs_fd`` in the job, graders/harness/cuda_memory.py) before any
  student code exists.

Protocol (JSON lines; results go out on ``results_fd``, commands come in on ``control_fd``;
the trusted side validates every message against graders/sandbox/protocol.py):

    -> hello {torch, device_name, pid, inputs_address, pool_address?}   before student code
    <- go {calls}                          baseline calls: a trusted no-op, before import
    -> done {ns, outs, triton_launches, triton_autotuned}
                                           one call per entry of ``calls``, each on its own
                                           inputs; one output description each; Triton
                                           kernels launched so far (CPU: interpreted)
    <- load {watch?}                       ``watch``: name patterns of the operators to count
                                           ([rules] forbid), wrapped before the import
    -> loaded | raised | exited | rejected after importing the submission
    <- go {calls}                          the submission's calls, same reply
    <- profile {inputs, top}               one call under torch.profiler
    -> profiled {ops}
    <- operators                           what the watch counted since the load: no call
    -> operators {calls, wrapped, intact, problems}
    <- canary {n, flush_bytes, runs}      trusted companions only: the memory-bus canary
    -> canary {best_s}
    <- trace {inputs}                      CUDA: one call in an NVTX range, for Nsight Compute
    -> traced
    <- exit
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import mmap
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from . import (
    compile_marks,
    operator_watch,
    timing,  # binds the timer before any student code exists
    triton_interpreter,
)


class Channel:
    def __init__(self, results_fd: int, control_fd: int) -> None:
        # Not inheritable: a subprocess started by the submission does not get them.
        os.set_inheritable(results_fd, False)
        os.set_inheritable(control_fd, False)
        self._out = os.fdopen(results_fd, "w", buffering=1, encoding="utf-8")
        self._in = os.fdopen(control_fd, "r", encoding="utf-8")

    def send(self, op: str, **fields: Any) -> None:
        self._out.write(json.dumps({"op": op, **fields}) + "\n")
        self._out.flush()

    def receive(self) -> dict[str, Any]:
        line = self._in.readline()
        if not line:
            os._exit(0)  # the trusted side went away: nothing left to do
        message: dict[str, Any] = json.loads(line)
        return message


class InputRegion:
    """Where the trusted side puts each call's inputs while we are frozen.

    On the CPU: private memory reserved here before any student code exists, as anonymous
    memory with huge pages where the kernel grants them, and touched once so no call pays for
    faulting it in: the same kind of memory a plain PyTorch program's inputs live in. On
    CUDA: the trusted side's device memory (``device_memory``), mapped here before student
    code exists; no host memory at all, whatever the inputs' size. Views are cached per
    layout.
    """

    _HUGE = 2 << 20

    def __init__(self, nbytes: int, device: str, device_memory: Any = None) -> None:
        self.device = device
        self._views: dict[str, Any] = {}
        if device_memory is not None:
            from . import cuda_memory

            self.address = device_memory.pointer
            self.bytes = cuda_memory.byte_tensor(device_memory.pointer, device_memory.size, 0)
            return
        size = (max(nbytes, 1) + self._HUGE - 1) // self._HUGE * self._HUGE
        # One huge page of slack so the region can start on a huge-page boundary.
        self.memory = mmap.mmap(-1, size + self._HUGE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            self.memory.madvise(mmap.MADV_HUGEPAGE)
        start = ctypes.addressof(ctypes.c_char.from_buffer(self.memory))
        self.offset = -start % self._HUGE
        self.address = start + self.offset
        for page in range(self.offset, self.offset + size, 4096):
            self.memory[page] = 0  # fault it in now, not inside a timed call

    def tensors(self, placements: list[dict[str, Any]]) -> list[Any]:
        key = json.dumps(placements, sort_keys=True)
        if key not in self._views:
            if len(self._views) > 64:
                self._views.clear()  # the check sizes come in turn; a window's sets together
            self._views[key] = [self._tensor(place) for place in placements]
        return list(self._views[key])

    def _tensor(self, place: dict[str, Any]) -> Any:
        import torch

        from .inputs import DTYPES

        dtype = DTYPES[place["dtype"]]
        count = 1
        for size in place["shape"]:
            count *= size
        if count == 0:
            return torch.empty(place["shape"], dtype=dtype, device=self.device)
        if self.device != "cpu":
            start = place["offset"]
            raw = self.bytes[start : start + count * dtype.itemsize]
            return raw.view(dtype).view(place["shape"])
        return torch.frombuffer(
            self.memory, dtype=dtype, count=count, offset=self.offset + place["offset"]
        ).view(place["shape"])


def _map_device_memory(job: dict[str, Any]) -> tuple[Any, Any]:
    """CUDA: map the trusted side's memory (the inputs, and the pool every tensor of this
    process will come from) and install the pool as torch's allocator, all before torch
    initialises CUDA. Returns (inputs, pool) as mapped here."""
    from . import cuda_memory

    cuda_memory.make_current(0)  # the sandbox sees only its slot's GPU
    inputs = cuda_memory.SharedMemory.open(job["inputs_fd"], job["inputs_size"], 0)
    pool = cuda_memory.SharedMemory.open(job["pool_fd"], job["pool_size"], 0)
    for fd in (job["inputs_fd"], job["pool_fd"]):
        os.close(fd)  # mapped: the descriptors are not the submission's to keep
    cuda_memory.install_torch_allocator(cuda_memory.Pool(pool.pointer, pool.size))
    return inputs, pool


def describe_exception(exc: BaseException, submission: str) -> dict[str, Any]:
    """Type, message and the deepest line of the submission on the stack."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == submission]
    last = frames[-1] if frames else None
    lines = traceback.format_exception(exc)
    # Keep the student's own frames and the final message; our frames are noise to them.
    shown = [ln for ln in lines if "/opt/grader/" not in ln and "harness/main.py" not in ln]
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:2000],
        "line": last.lineno if last else None,
        "code": (last.line or "")[:300] if last else None,
        "traceback": "".join(shown)[-4000:],
    }


def _load(channel: Channel, path: str, entry: str) -> Callable[..., Any] | None:
    spec = importlib.util.spec_from_file_location("submission", path)
    if spec is None or spec.loader is None:
        channel.send("rejected", reason="cannot import the submission file")
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        channel.send("exited", phase="import", code=str(exc.code))
        return None
    except BaseException as exc:
        channel.send("raised", phase="import", **describe_exception(exc, path))
        return None
    function = getattr(module, entry, None)
    if function is None:
        channel.send("rejected", reason=f"no function named `{entry}` is defined")
        return None
    if not callable(function):
        channel.send("rejected", reason=f"`{entry}` is a {type(function).__name__}, not a function")
        return None
    channel.send("loaded")
    return function


def _describe_output(value: Any) -> tuple[dict[str, Any], Any]:
    """Where the output lies (its address in this process: in host memory on the CPU, in the
    device memory pool shared with the trusted side on CUDA), and what must stay alive until
    the trusted side has read it. Nothing is copied: the window holds the calls only."""
    import torch

    if type(value) is not torch.Tensor:
        return {"type": type(value).__qualname__[:100]}, value
    described: dict[str, Any] = {
        "type": "Tensor",
        "shape": list(value.shape),
        "strides": list(value.stride()),
        "dtype": str(value.dtype).removeprefix("torch."),
        "device": value.device.type,  # where the submission left it: the check asks
        "address": value.data_ptr(),
    }
    return described, value


def _call(
    function: Callable[..., Any],
    region: InputRegion,
    command: dict[str, Any],
    timer: timing.Timer,
) -> tuple[list[Any], int]:
    """Every call of one window, each on its own inputs, then one stop of the clock (which
    synchronises the device, so queued GPU work counts in full)."""
    sets = [region.tensors(placements) for placements in command["calls"]]
    outputs = []
    timer.start()
    for tensors in sets:
        outputs.append(function(*tensors))
    elapsed = timer.stop()
    check_pool()  # a refused allocation is an error even if nothing faulted on it
    return outputs, elapsed


def check_pool() -> None:
    """CUDA: raise the out-of-memory error of an allocation the pool refused (torch got a null
    pointer, which it does not check). Nothing to do on the CPU, or before the pool exists."""
    module = sys.modules.get(f"{__package__}.cuda_memory")
    pool = module.installed_pool() if module is not None else None
    if pool is not None:
        pool.check()


def own_error(exc: BaseException) -> BaseException:
    """What a call that raised really ran into: a refused allocation first (the kernel then
    faulted at address 0, which says nothing useful to the student), else ``exc``."""
    try:
        check_pool()
    except MemoryError as refused:
        return refused
    return exc


def _leave() -> None:
    """Straight out: an orderly interpreter shutdown with torch loaded takes most of a second,
    which the trusted side would wait for, and nothing done after ``exit`` earns anything."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _empty_for(device: str) -> Callable[..., Any]:
    """The baseline call: everything a call costs except the submission's own work. On CUDA
    it returns a tensor of its own, from the pool, as a submission does."""
    if device == "cpu":
        return lambda *tensors: tensors[0] if tensors else None
    import torch

    own = torch.zeros(1, device=device)
    return lambda *tensors: own


def _start(job: dict[str, Any], channel: Channel) -> tuple[InputRegion, timing.Timer]:
    """Everything before the first command: torch, the device's memory, the input region,
    the profiler's start; then ``hello``. No student code exists yet."""
    import torch

    device = job["device"]
    device_memory: tuple[Any, Any] | None = None
    if device == "cpu":
        torch.set_num_threads(1)
        name = "cpu"
        if os.environ.get("TRITON_INTERPRET") == "1":
            triton_interpreter.install()  # acts once the submission imports triton
    else:
        device_memory = _map_device_memory(job)
        torch.cuda.init()
        name = torch.cuda.get_device_name(device)
    compile_marks.install(torch)  # compile time the trusted side may add to setup_s
    if job.get("warm_profiler"):
        _warm_profiler()
    timer = timing.Timer(device)
    # The trusted side flushes the caches itself, between calls (the L2 from its own CUDA
    # context: the cache is the device's, not a process's).
    region = InputRegion(job["inputs_bytes"], device, device_memory and device_memory[0])
    where = {"pool_address": device_memory[1].pointer} if device_memory else {}
    channel.send(
        "hello",
        torch=torch.__version__,
        device_name=name,
        pid=os.getpid(),
        inputs_address=region.address,
        **where,
    )
    return region, timer


def main(job_path: str) -> None:
    with open(job_path, encoding="utf-8") as handle:
        job = json.load(handle)
    channel = Channel(job["results_fd"], job["control_fd"])
    region, timer = _start(job, channel)
    function: Callable[..., Any] = _empty_for(job["device"])
    submission = job["submission"]
    # The last window's outputs, kept until the next ``go`` so the trusted side can read
    # them frozen; freed before the next calls allocate, so they do not pay for two sets.
    alive: list[Any] = []
    watch = operator_watch.OperatorWatch(())
    while True:
        command = channel.receive()
        op = command["op"]
        if op == "exit":
            _leave()
        if op == "operators":  # no call: the counts of every call since the load
            channel.send("operators", **watch.report())
            continue
        if op == "load":
            # Before the import, so that nothing the submission runs (at import, in any call,
            # on any thread) passes the watch; installing it runs no student code.
            watch = operator_watch.OperatorWatch(command.get("watch") or ())
            watch.install()
            loaded = _load(channel, submission, job["entry"])
            if loaded is None:
                return
            function = loaded
            continue
        alive.clear()
        try:
            if op == "go":
                outputs, elapsed = _call(function, region, command, timer)
                described = [_describe_output(value) for value in outputs]
                alive.extend(kept for _, kept in described)
                outs = [out for out, _ in described]
                channel.send("done", ns=elapsed, outs=outs, **triton_interpreter.launches())
                # Only ``alive`` holds them now, and it is cleared before the next call.
                outputs = described = []
            elif op == "profile":
                tensors = region.tensors(command["inputs"])
                channel.send("profiled", ops=_profile(function, tensors, command.get("top", 10)))
            elif op == "canary":  # asked of trusted companions only (bus_canary.py)
                from . import bus_canary

                best = bus_canary.measure(command["n"], command["flush_bytes"], command["runs"])
                channel.send("canary", best_s=best)
            elif op == "trace":
                _trace(function, region.tensors(command["inputs"]))
                channel.send("traced")
        except SystemExit as exc:
            channel.send("exited", phase="call", code=str(exc.code))
            return
        except BaseException as exc:
            own = own_error(exc)
            channel.send("raised", phase="call", **describe_exception(own, submission))
            return


TRACE_RANGE = "graded-call"  # the NVTX range Nsight Compute is told to profile


def _trace(function: Callable[..., Any], tensors: list[Any]) -> None:
    """One call inside an NVTX range, for a hardware profiler that wraps this process
    (graders/grading/hardware_profile.py): only the submission's kernels fall inside it."""
    import torch

    with torch.cuda.nvtx.range(TRACE_RANGE):
        function(*tensors)
        torch.cuda.synchronize()


@contextlib.contextmanager
def _profiler_notes_hidden() -> Iterator[None]:
    """torch.profiler writes a note to stderr as each session starts and stops; hide them,
    so they do not read as the submission's own output."""
    sys.stderr.flush()
    saved = os.dup(2)
    quiet = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(quiet, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(quiet)


def _warm_profiler() -> None:
    """Start the profiler once before any submission exists, so the profile taken after the
    grade does not pay its tracing library's start (CUPTI's, on a GPU)."""
    with _profiler_notes_hidden(), _profiler(cuda=False):
        pass


def _profiler(cuda: bool) -> Any:
    """What ``torch.profiler.profile`` runs, without its first-session check for inductor's
    CUDA graphs: that ``hasattr(torch, "_inductor")`` imports torch._inductor, 1-2 s of a
    runner's start here for a setting the profile does not use."""
    from torch.autograd import profiler

    return profiler.profile(use_device="cuda" if cuda else None, use_kineto=True)


def _profile(function: Callable[..., Any], buffers: list[Any], top: int) -> list[dict[str, Any]]:
    """Top operators of one call by self time (CPU and, when present, CUDA)."""
    cuda = bool(buffers) and buffers[0].is_cuda
    try:
        function(*buffers)  # warm up first: one-off costs are not what the profile is for
        with _profiler_notes_hidden(), _profiler(cuda) as prof:
            function(*buffers)
            if cuda:
                import torch

                torch.cuda.synchronize()
    except BaseException:
        return []
    rows = []
    for event in prof.key_averages():
        self_us = event.self_device_time_total if cuda else event.self_cpu_time_total
        rows.append(
            {
                "name": event.key[:120],
                "calls": int(event.count),
                "self_time_s": float(self_us) / 1e6,
            }
        )
    rows.sort(key=lambda row: row["self_time_s"], reverse=True)
    return rows[:top]


if __name__ == "__main__":
    main(sys.argv[1])
