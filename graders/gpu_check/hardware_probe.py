"""gpu-check's first step: the hardware's questions, each answered as a row, in under 3 minutes.

The CUDA path rests on facts only a GPU machine can tell, so they are asked first, before any
grading depends on them:

- whether two sandboxed processes share one allocation the trusted side exported, each
  importing it as its own sandbox uid (how every bench shares its inputs);
- whether the driver's process lock works, with a 2 s timeout, and its latency (lock and
  unlock) over 50 empty windows: it sits inside every timed window;
- whether a second process that shares the memory, or the trusted side itself, blocks while
  the first is locked (reported for drivers older than IPC support in the lock): a bench's
  companions and the trusted side work on the shared inputs while a sandbox stays locked;
- the device nodes' modes (the sandbox's uid has no groups: they must be 0666);
- what NVML counts for a sandbox that maps the trusted side's memory (graders/devices/cuda.py
  subtracts the mapped inputs from it);
- where nvcc and ncu are as a CUDA sandbox sees them (asked on a CPU machine too).

Then ``gpu_completion``: the witness the check's gradings will use, the lock unless it failed
or blocked a sharer here (the process's :data:`graders.devices.cuda_lock.LOCK_PROBE` is set from
the answers, so a grading in the same process uses it). On a CPU run each hardware question is
a row that says it needs a GPU. The answers are kept for the process: a second call repeats
them without asking the hardware again.
"""

from __future__ import annotations

import contextlib
import os
import select
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graders.gpu_check.results import Row, judged

if TYPE_CHECKING:
    from graders.gpu_check.steps import StepContext
    from graders.sandbox.launch import SandboxedProcess

BUDGET_S = 170.0  # the questions together, under the step's 3 minutes
LOCK_WINDOWS = 50
LOCK_TIMEOUT_S = 2.0
BLOCK_WAIT_S = 3.0  # a write of 4 KiB takes microseconds: 3 s unanswered is blocked
SHARED_BYTES = 256 << 20  # large enough to see in NVML's per-process figures
MARK = 0x5EED1234

SHARED = "GPU memory shared by two sandboxes"
LOCK = "GPU process lock (2 s timeout)"
BLOCKING = "GPU lock and a process sharing the memory"
NODES = "GPU device nodes"
NVML = "NVML's view of a sandbox's imported memory"
NVCC = "nvcc inside the sandbox"
NCU = "ncu inside the sandbox"
COMPLETION = "gpu_completion"
HARDWARE = (SHARED, LOCK, BLOCKING, NODES, NVML)

_WHERE = (
    "import os, shutil, subprocess\n"
    "for tool in ('nvcc', 'ncu'):\n"
    "    found = shutil.which(tool)\n"
    "    said = ''\n"
    "    if found:\n"
    "        try:\n"
    "            done = subprocess.run([found, '--version'], capture_output=True, text=True,"
    " timeout=40)\n"
    "            lines = [l for l in (done.stdout + done.stderr).splitlines() if l.strip()]\n"
    "            said = (lines[-1] if lines else '') if done.returncode == 0 else"
    " f'exit {done.returncode}: ' + ' '.join(lines[-1:])\n"
    "        except Exception as exc:\n"
    "            said = f'does not run: {exc}'\n"
    "    print(tool, found or '-', said.replace(chr(10), ' ')[:200], sep='\\t')\n"
    "print('CUDA_HOME', os.environ.get('CUDA_HOME') or '-', '', sep='\\t')\n"
)

_kept: list[Row] | None = None
_kept_raw: dict[str, Any] = {}


def probe(ctx: StepContext) -> None:
    """Ask every question (once per process) and write its row."""
    global _kept
    if _kept is not None:
        for row in _kept:
            ctx.row(row.measure, row.target, row.value, row.status)
        ctx.raw.update(_kept_raw)
        return
    first = len(ctx.rows)
    deadline = time.monotonic() + BUDGET_S
    tools(ctx)
    if not ctx.cuda:
        for measure in HARDWARE:
            ctx.needs_gpu(measure, "this run is on the CPU")
        ctx.row(COMPLETION, "the witness the check uses", "synchronous (CPU)", "info")
        ctx.raw[COMPLETION] = "synchronous"
    elif not Path("/dev/nvidiactl").exists():
        for measure in HARDWARE:
            ctx.row(measure, "answered", "not measured: no NVIDIA driver here", "not measured")
        completion(ctx)
    else:
        device_nodes(ctx)
        try:
            gpu_questions(ctx, deadline)
        finally:
            completion(ctx)
    _kept = list(ctx.rows[first:])
    _kept_raw.update({key: ctx.raw[key] for key in ("probe", COMPLETION) if key in ctx.raw})


def forget() -> None:
    """Drop the kept answers (a test asks again)."""
    global _kept
    _kept = None
    _kept_raw.clear()


def completion(ctx: StepContext) -> None:
    from graders.devices import cuda_lock

    witness = cuda_lock.completion_witness()
    ctx.raw[COMPLETION] = witness.kind
    ctx.row(COMPLETION, "the witness the check uses", f"{witness.kind}: {witness.note}", "info")


# ---------------------------------------------------------------------------- the tools


def where_tools(output: str) -> dict[str, tuple[str | None, str]]:
    """(path or None, what ``--version`` said) per tool, from :data:`_WHERE`'s output."""
    found: dict[str, tuple[str | None, str]] = {}
    for line in output.splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            name, path, said = parts
            found[name] = (None if path == "-" else path, said.strip())
    return found


def tools(ctx: StepContext) -> None:
    """nvcc and ncu as a CUDA sandbox sees them: its PATH and binds, as its uid."""
    from graders.errors import GraderError
    from graders.sandbox import launch

    try:
        finished = launch.run_once(
            [sys.executable, "-c", _WHERE], device="cuda", slot=0, timeout_s=60
        )
    except GraderError as exc:
        for measure in (NVCC, NCU):
            ctx.row(measure, "found", f"the sandbox did not start: {exc}"[:300], "FAIL")
        return
    found = where_tools(finished.stdout)
    if finished.returncode != 0 or "nvcc" not in found:
        said = (finished.stderr or finished.stdout).strip()[-300:]
        for measure in (NVCC, NCU):
            ctx.row(measure, "found", f"the question failed in the sandbox: {said}", "FAIL")
        return
    home = found.get("CUDA_HOME", (None, ""))[0]
    ctx.raw.setdefault("probe", {})["tools"] = {name: list(value) for name, value in found.items()}
    for measure, tool, why in ((NVCC, "nvcc", "CUDA C++ builds"), (NCU, "ncu", "DRAM bytes")):
        path, said = found[tool]
        value = f"{path} ({said})" if path else "not found on the sandbox's PATH"
        if tool == "nvcc":
            value += f"; CUDA_HOME={home or 'unset'}"
        # On a CPU machine where the toolkit is absent the answer is a fact, not a failure.
        ok = path is not None and not said.startswith(("exit", "does not run"))
        ctx.row(measure, f"found and runs ({why})", value, judged(ok, ctx.cuda))


# ---------------------------------------------------------------------------- the device


def device_nodes(ctx: StepContext) -> None:
    from graders.devices import gpu_nodes

    names = gpu_nodes.device_nodes(
        os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("CUDA_DEVICE_ORDER")
    )
    modes = []
    for name in names:
        with contextlib.suppress(OSError):
            modes.append(f"{name} {os.stat(f'/dev/{name}').st_mode & 0o7777:04o}")
    closed = gpu_nodes.unreachable(names)
    ctx.row(
        NODES,
        "mode 0666 (the sandbox's uid has no groups)",
        (closed or ", ".join(modes) or "no /dev/nvidia* node")[:300],
        judged(closed is None and bool(names)),
    )


@dataclass
class Child:
    """One sandboxed process mapping the trusted side's memory (harness/shared_memory_child.py)."""

    process: SandboxedProcess
    scratch: Any
    control: int
    results: int
    host_pid: int = 0
    buffered: bytes = b""

    def ask(self, line: str | None, timeout_s: float) -> str | None:
        """Send ``line`` (None: only listen) and the next line back, or None by the timeout."""
        if line is not None:
            os.write(self.control, (line + "\n").encode())
        end = time.monotonic() + timeout_s
        while b"\n" not in self.buffered:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.results], [], [], left)[0]:
                return None
            chunk = os.read(self.results, 4096)
            if not chunk:
                return None
            self.buffered += chunk
        answer, _, self.buffered = self.buffered.partition(b"\n")
        return answer.decode(errors="replace")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.control, b"exit\n")
        for fd in (self.control, self.results):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.process.close()
        self.scratch.close()


def start_child(memory: Any, slot: int, timeout_s: float) -> Child:
    """A CUDA sandbox of ``slot`` (its own uid) that maps ``memory`` and says ready."""
    from graders.locations import HARNESS_PARENT
    from graders.sandbox import launch

    uid = launch.slot_uid(slot) if launch.mode() == "root" else None
    scratch = launch.Scratch(uid)
    where = launch.layout(scratch.root, HARNESS_PARENT)
    control_r, control_w = os.pipe()
    results_r, results_w = os.pipe()
    fd = memory.fd
    command = [
        sys.executable,
        "-I",
        "-c",
        f"import sys; sys.path.insert(0, {where.grader_root!r}); "
        "from harness.shared_memory_child import main; "
        f"main({fd}, {memory.size}, {control_r}, {results_w})",
    ]
    try:
        process = launch.start(
            command,
            scratch=scratch.root,
            grader_root=HARNESS_PARENT,
            device="cuda",
            slot=slot,
            limits=launch.SandboxLimits(cpu_s=int(BUDGET_S), memory_mb=2048),
            env=launch.sandbox_env(where.scratch, "cuda"),
            pass_fds=(fd, control_r, results_w),
            uid=uid,
        )
    except BaseException:
        for end in (control_r, control_w, results_r, results_w):
            os.close(end)
        scratch.close()
        raise
    os.close(control_r)
    os.close(results_w)
    child = Child(process, scratch, control_w, results_r)
    ready = child.ask(None, timeout_s)
    if ready is None or not ready.startswith("ready "):
        stderr = process.stderr.text(tail=300, settle_s=0.5)
        child.close()
        raise RuntimeError(f"a sandbox did not map the memory: {ready or stderr or 'no answer'}")
    host_pid = process.host_pid(int(ready.split()[1]))
    if host_pid is None:
        child.close()
        raise RuntimeError("the sandbox's process could not be found from outside")
    child.host_pid = host_pid
    return child


def lock_latencies(pid: int, windows: int = LOCK_WINDOWS) -> list[float]:
    """Seconds of a lock and an unlock of ``pid``, idle, ``windows`` times; the first through
    :func:`graders.devices.cuda_lock.try_first_lock`, which records whether the lock works.
    Empty when the first lock failed; raises CudaMemoryError if a later one does."""
    from graders.devices import cuda_lock
    from graders.harness import cuda_memory

    seconds: list[float] = []
    for index in range(windows):
        began = time.monotonic()
        if index == 0:
            if cuda_lock.try_first_lock(pid, LOCK_TIMEOUT_S) is None:
                return []
        else:
            cuda_memory.lock_process(pid, int(LOCK_TIMEOUT_S * 1000))
        cuda_memory.unlock_process(pid)
        seconds.append(time.monotonic() - began)
    return seconds


def latency_text(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    return (
        f"works: lock + unlock median {statistics.median(ordered) * 1e6:.0f} us, "
        f"max {ordered[-1] * 1e6:.0f} us over {len(ordered)} empty windows"
    )


def gpu_questions(ctx: StepContext, deadline: float) -> None:
    from graders.devices import cuda_lock
    from graders.harness import cuda_memory

    facts: dict[str, Any] = ctx.raw.setdefault("probe", {})
    cuda_memory.make_current(0)
    memory = cuda_memory.SharedMemory.create(SHARED_BYTES, 0)
    children: list[Child] = []
    try:
        for slot in (0, 1):  # two uids, as a submission's and a companion's sandboxes
            children.append(start_child(memory, slot, max(deadline - time.monotonic(), 1.0)))
        first, second = children
        wrote = first.ask(f"write {MARK}", 30.0)
        read = second.ask("read", 30.0)
        trusted = cuda_memory.read_u32(memory.pointer)
        shared = wrote == "wrote" and read == f"value {MARK}" and trusted == MARK
        facts["shared"] = {"wrote": wrote, "read": read, "trusted": trusted}
        ctx.row(
            SHARED,
            "the second reads what the first wrote, each imported as its sandbox's uid",
            f"first: {wrote}; second: {read}; trusted side: {trusted:#x}",
            judged(shared),
        )

        try:
            seconds = lock_latencies(first.host_pid)
        except cuda_memory.CudaMemoryError as exc:
            cuda_lock.LOCK_PROBE.record(False, f"a later lock failed: {exc}")
            seconds = []
        facts["lock_latency_s"] = seconds
        works = bool(seconds)
        ctx.row(
            LOCK,
            "locks and unlocks; latency over 50 empty windows",
            latency_text(seconds) if works else f"fails: {cuda_lock.LOCK_PROBE.unavailable()}",
            "pass" if works else "info",  # the harness's synchronise stands in: said below
        )

        if works:
            sharer_blocks(ctx, memory, first, second)
        else:
            ctx.row(BLOCKING, "does not block", "not asked: the lock does not work here", "info")

        nvml_view(ctx, second)
    finally:
        for child in children:
            child.close()
        memory.close()


def sharer_blocks(ctx: StepContext, memory: Any, first: Child, second: Child) -> None:
    """Lock ``first``; can ``second`` and the trusted side still work on the shared memory?"""
    from graders.devices import cuda_lock
    from graders.harness import cuda_memory

    trusted_done = threading.Event()

    def trusted_write() -> None:
        with contextlib.suppress(cuda_memory.CudaMemoryError):
            cuda_memory.fill_u32(memory.pointer, 7, 1024)
        trusted_done.set()

    cuda_memory.lock_process(first.host_pid, int(LOCK_TIMEOUT_S * 1000))
    try:
        answer = second.ask("write 9", BLOCK_WAIT_S)
        writer = threading.Thread(target=trusted_write, daemon=True)
        writer.start()
        trusted_ok = trusted_done.wait(BLOCK_WAIT_S)
    finally:
        cuda_memory.unlock_process(first.host_pid)
    if answer is None:
        answer = second.ask(None, 10.0)  # unlocked now: it should answer
        blocked = "the second sandbox"
    else:
        blocked = ""
    if not trusted_ok:
        blocked += (" and " if blocked else "") + "the trusted side"
    if blocked:
        # The lock would hang a bench's companions or its own draws: not a witness here.
        cuda_lock.LOCK_PROBE.record(False, f"{blocked} blocked while a sharer was locked")
    ctx.raw.setdefault("probe", {})["blocked"] = blocked or None
    ctx.row(
        BLOCKING,
        "neither a second sandbox nor the trusted side blocks while the first is locked",
        f"{blocked} blocked (then: {answer})" if blocked else "neither blocks",
        judged(not blocked),
    )


def nvml_view(ctx: StepContext, child: Child) -> None:
    try:
        from graders.devices.nvml import GpuMemoryWatch
    except ImportError:
        ctx.row(NVML, "recorded", "nvidia-ml-py is not installed", "not measured")
        return
    watch = GpuMemoryWatch(0)
    reason = watch.available()
    used = None if reason else watch.used_bytes({child.host_pid})
    ctx.raw.setdefault("probe", {})["nvml_used_bytes"] = used
    if used is None:
        ctx.row(NVML, "recorded", f"not readable: {reason or 'no figure'}", "not measured")
        return
    ctx.row(
        NVML,
        "recorded (the engine subtracts the mapped inputs and a context's allowance)",
        f"{used >> 20} MiB for a sandbox that maps {SHARED_BYTES >> 20} MiB of the trusted "
        "side's memory and holds a context",
        "info",
    )
