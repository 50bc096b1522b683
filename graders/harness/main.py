"""Sandbox-side driver: import the submission, then call it on the trusted side's command.

Protocol (JSON lines; results go out on ``results_fd``, commands come in on
``control_fd``; both were opened by the trusted side, stdout/stderr stay the student's):

    -> hello {torch, device_name}          after torch is imported, before student code
    -> loaded | raised | exited | rejected after importing the submission
    <- call {shapes, layout, seed, flush}  fill inputs from seed, flush cache, time one call
    -> done {ns, overhead_ns, wait_ns, out} out describes what came back; wait_ns is
                                           time spent preempted during the call
    (every message also carries queued_ns: run-queue wait since the previous one)
    <- save {file, sample?} | drop         save output + inputs-after-call for checking
                                           (sample: only these flat positions, for huge ones)
    -> saved
    <- profile {top}                       one call under torch.profiler
    -> profiled {ops}
    <- exit

The trusted side decides which timed calls it verifies only *after* each call
returned, so a submission cannot compute correctly just for the checked ones.
This process holds no reference code and no expected outputs: all checking is
done outside. A submission can of course tamper with this process; what it can
forge is bounded there (times are cross-checked against wall time and peaks).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from typing import Any

from . import timing  # binds the timer before any student code exists

_now = timing.now_ns


class Channel:
    def __init__(self, results_fd: int, control_fd: int) -> None:
        # Not inheritable: a subprocess started by the submission does not get them.
        os.set_inheritable(results_fd, False)
        os.set_inheritable(control_fd, False)
        self._out = os.fdopen(results_fd, "w", buffering=1, encoding="utf-8")
        self._in = os.fdopen(control_fd, "r", encoding="utf-8")
        self._queued_mark = _runqueue_wait_ns()

    def send(self, op: str, **fields: Any) -> None:
        # queued_ns: time spent runnable-but-not-running since our previous message,
        # including the wait to be scheduled after the command arrived. The trusted
        # side needs it to tell a busy machine from a clock that was tampered with.
        queued = _runqueue_wait_ns()
        fields.setdefault("queued_ns", queued - self._queued_mark)
        self._out.write(json.dumps({"op": op, **fields}) + "\n")
        self._out.flush()
        self._queued_mark = _runqueue_wait_ns()

    def receive(self) -> dict[str, Any]:
        line = self._in.readline()
        if not line:
            os._exit(0)  # the trusted side went away: nothing left to do
        return json.loads(line)


def _describe_exception(exc: BaseException, submission: str) -> dict[str, Any]:
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


def _load(channel: Channel, path: str, entry: str) -> Any:
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
        channel.send("raised", phase="import", **_describe_exception(exc, path))
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


def _describe_output(value: Any) -> dict[str, Any]:
    import torch

    if type(value) is not torch.Tensor:
        return {"type": type(value).__qualname__}
    return {
        "type": "Tensor",
        "shape": list(value.shape),
        "dtype": str(value.dtype).removeprefix("torch."),
        "device": value.device.type,
    }


def main(job_path: str) -> None:  # noqa: C901, PLR0915  (one command loop; its protocol is being redesigned as a whole, so it is not split piecemeal)
    with open(job_path, encoding="utf-8") as handle:
        job = json.load(handle)
    channel = Channel(job["results_fd"], job["control_fd"])
    import torch

    from . import inputs

    device = job["device"]
    if device == "cpu":
        torch.set_num_threads(1)
        name = "cpu"
    else:
        torch.cuda.init()
        name = torch.cuda.get_device_name(device)
    timer = timing.Timer(device)
    flusher = timing.CacheFlusher(device, job.get("flush_bytes"))
    channel.send("hello", torch=torch.__version__, device_name=name)

    submission = job["submission"]
    function = _load(channel, submission, job["entry"])
    if function is None:
        return

    buffers: list[torch.Tensor] = []
    shapes_key: Any = None
    output: Any = None
    while True:
        command = channel.receive()
        op = command["op"]
        if op == "exit":
            return
        if op == "call":
            began = _now()
            layout = command["layout"]
            key = [(item["shape"], item["dtype"]) for item in layout]
            if key != shapes_key:
                buffers, shapes_key, output = [], None, None
                buffers = inputs.allocate(layout, device)
                shapes_key = key
            output = None  # free the previous output before the next call allocates
            inputs.fill_(buffers, layout, command["seed"])
            if command.get("flush", True):
                flusher.flush()
            elapsed = 0
            try:
                waited = _runqueue_wait_ns()
                timer.start()
                output = function(*buffers)
                elapsed = timer.stop()
                waited = _runqueue_wait_ns() - waited
            except SystemExit as exc:
                channel.send("exited", phase="call", code=str(exc.code))
                return
            except BaseException as exc:
                channel.send("raised", phase="call", **_describe_exception(exc, submission))
                return
            overhead = _now() - began - elapsed
            channel.send(
                "done",
                ns=elapsed,
                overhead_ns=overhead,
                wait_ns=waited,
                out=_describe_output(output),
            )
        elif op == "save":
            began = _now()
            names = [item["name"] for item in command["layout"]]
            sample = command.get("sample")  # {tensor name: flat indices} for huge tensors
            payload: dict[str, Any] = {
                "inputs": {
                    name: _take(t, sample.get(name) if sample else None)
                    for name, t in zip(names, buffers, strict=True)
                }
            }
            if type(output) is torch.Tensor:
                payload["out"] = _take(output, sample.get("out") if sample else None)
            torch.save(payload, os.path.join(job["outbox"], command["file"]))
            channel.send("saved", overhead_ns=_now() - began)
        elif op == "drop":
            pass
        elif op == "profile":
            channel.send("profiled", ops=_profile(function, buffers, command.get("top", 10)))


def _runqueue_wait_ns() -> int:
    """Time this thread spent runnable but not running (preempted), from schedstat.

    On a shared machine another process landing on our core stretches a call; the
    trusted side discards such runs instead of averaging the disturbance in.
    """
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as handle:
            return int(handle.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _take(tensor: Any, indices: list[int] | None) -> Any:
    """A CPU copy of ``tensor``, or of just the given flat positions of it."""
    import torch

    tensor = tensor.detach()
    if indices is None:
        # clone(): a view must not drag its whole (maybe huge) storage along.
        return tensor.to("cpu").contiguous().clone()
    flat = tensor.reshape(-1)
    return flat[torch.tensor(indices, dtype=torch.int64, device=flat.device)].to("cpu")


def _profile(function: Any, buffers: list[Any], top: int) -> list[dict[str, Any]]:
    """Top operators of one call by self time (CPU and, when present, CUDA)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    cuda = bool(buffers) and buffers[0].is_cuda
    if cuda:
        activities.append(ProfilerActivity.CUDA)
    try:
        function(*buffers)  # warm up first: one-off costs are not what the profile is for
        with profile(activities=activities) as prof:
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
