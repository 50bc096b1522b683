"""Start an IPython kernel inside the bubblewrap sandbox and connect to it from outside.

The kernel is the only thing that runs in the sandbox: it gets no notebook, only the
cells the parent sends it one at a time. It talks jupyter's ZMQ protocol over unix
sockets (``ipc`` transport) placed in the scratch folder, the one directory both
sides see (the sandbox has no network at all). Paths differ on each side (the sandbox
sees the scratch folder at ``/scratch``), so the kernel's connection file names the
inside path and the parent's client is given the outside one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zmq
from jupyter_client.blocking.client import BlockingKernelClient

from graders.errors import GraderError
from graders.locations import HARNESS_PARENT
from graders.sandbox import containment
from graders.sandbox import launch as sandbox

if TYPE_CHECKING:
    from jupyter_client.connect import KernelConnectionInfo

GRADER_ROOT = HARNESS_PARENT  # only its harness/ is mounted
# Bounds on what kernel messages may cost the parent: ZMQ drops the connection on a
# message larger than this instead of buffering it (a print loop can put 20 MB in one
# stream message), which the disconnect monitors report; at most RECEIVE_QUEUE messages
# wait per socket.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
RECEIVE_QUEUE = 32
_PORTS: KernelConnectionInfo = {
    "shell_port": 1,
    "iopub_port": 2,
    "stdin_port": 3,
    "control_port": 4,
    "hb_port": 5,
}


@dataclass(frozen=True)
class KernelLimits:
    cpu_s: int
    memory_mb: int
    startup_s: float = 60.0


class SandboxedKernel:
    """A kernel process in the sandbox plus a BlockingKernelClient on the parent side."""

    def __init__(
        self,
        process: sandbox.SandboxedProcess,
        client: BlockingKernelClient,
        context: zmq.Context[Any],
    ) -> None:
        self.process, self.client, self._context = process, client, context
        # Started once the kernel is ready, so only later disconnects are reported.
        self.disconnect_monitors: list[zmq.Socket[Any]] = []

    def watch_disconnects(self) -> None:
        for channel in (self.client.shell_channel, self.client.iopub_channel):
            self.disconnect_monitors.append(
                channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            )

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def exit_description(self) -> str:
        """Words for how the kernel process ended (for the student-facing message)."""
        code = self.process.wait(timeout=2)
        if self.process.oom_killed():
            return "it ran out of memory"
        if code is None:
            return "it stopped answering"
        if code > 128:  # bwrap reports a child killed by signal N as 128+N
            code = -(code - 128)
        if code < 0:
            import signal

            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            hint = {"SIGKILL": " (often: out of memory)", "SIGXCPU": " (CPU time limit)"}
            return f"it was killed by {name}{hint.get(name, '')}"
        return f"it exited with status {code}"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop_channels()
        self.process.close()
        with contextlib.suppress(Exception):
            self._context.destroy(linger=0)


def _client_context() -> zmq.Context[Any]:
    """A private ZMQ context whose sockets refuse oversized messages and cap their queue."""
    context: zmq.Context[Any] = zmq.Context()
    context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
    context.setsockopt(zmq.LINGER, 0)
    return context


def start_kernel(scratch: sandbox.Scratch, *, slot: int, limits: KernelLimits) -> SandboxedKernel:
    """Launch ``python -m ipykernel_launcher -f <connection file>`` sandboxed; wait until it
    answers kernel_info. Raises GraderError when it does not start (no student code has
    run yet, so that is never the student's fault)."""
    where = sandbox.layout(scratch.root, GRADER_ROOT)
    uid = sandbox.slot_uid(slot) if sandbox.mode() == "root" else None
    key = secrets.token_hex(32)
    common: KernelConnectionInfo = {
        **_PORTS,
        "transport": "ipc",
        "key": key,
        "signature_scheme": "hmac-sha256",
    }
    # The sockets live in out/, a size-capped tmpfs of the sandbox user's (it binds them
    # there); we reach it through the sandbox's root, /proc/<pid>/root, once it runs.
    inside: KernelConnectionInfo = {
        **common,
        "ip": f"{where.scratch}/out/kernel",
        "kernel_name": "python3",
    }
    connection_file = scratch.inbox / "kernel.json"
    connection_file.write_text(json.dumps(inside))
    os.chmod(connection_file, 0o644)

    command = [
        sys.executable,
        "-I",  # no user site, no PYTHONPATH, no cwd on sys.path
        "-m",
        "ipykernel_launcher",
        "-f",
        f"{where.scratch}/in/kernel.json",
        "--HistoryManager.hist_file=:memory:",
    ]
    home = f"{where.scratch}/home"
    # The sandbox's /tmp tmpfs belongs to root (bwrap mounts it before setpriv drops to
    # the sandbox uid), and ipykernel needs a writable temp dir: use one under home/.
    _private_dir(scratch.home / ".tmp", uid)
    env = sandbox.sandbox_env(
        where.scratch,
        "cpu",
        {
            "IPYTHONDIR": f"{home}/.ipython",
            "JUPYTER_RUNTIME_DIR": f"{home}/.runtime",
            "JUPYTER_PLATFORM_DIRS": "1",
            "MPLBACKEND": "agg",
            "TMPDIR": f"{home}/.tmp",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        },
    )
    process = sandbox.start(
        command,
        scratch=scratch.root,
        grader_root=GRADER_ROOT,
        device="cpu",
        slot=slot,
        limits=sandbox.SandboxLimits(cpu_s=limits.cpu_s, memory_mb=limits.memory_mb),
        env=env,
    )
    context = _client_context()
    client = BlockingKernelClient(context=context)
    try:
        root = _sandbox_root(process)
    except GraderError:
        process.close()
        raise
    outside: KernelConnectionInfo = {**common, "ip": f"{root}{where.scratch}/out/kernel"}
    client.load_connection_info(outside)
    try:
        _wait_until_ready(process, client, limits.startup_s)
    except BaseException:
        kernel = SandboxedKernel(process, client, context)
        stderr = process.stderr.text(tail=3000)
        kernel.close()
        raise GraderError(f"the notebook kernel did not start in the sandbox: {stderr}") from None
    kernel = SandboxedKernel(process, client, context)
    kernel.watch_disconnects()
    return kernel


def _sandbox_root(process: sandbox.SandboxedProcess) -> str:
    """The sandbox's file system as seen from here: the root of a process inside it."""
    if sandbox.mode() == "none":
        return ""  # no mount namespace: its paths are ours
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        # bwrap's child enters the new namespaces; /proc/<pid>/root follows its pivot.
        inside = [pid for pid in containment.process_tree(process.pid) if pid != process.pid]
        if inside:
            return f"/proc/{inside[0]}/root"
        if process.poll() is not None:
            break
        time.sleep(0.01)
    raise GraderError("the notebook sandbox did not start")


def _private_dir(path: Path, uid: int | None) -> None:
    path.mkdir(mode=0o700, exist_ok=True)
    if uid is not None:
        os.chown(path, uid, uid)


def _wait_until_ready(
    process: sandbox.SandboxedProcess, client: BlockingKernelClient, budget_s: float
) -> None:
    deadline = time.monotonic() + budget_s
    socket = Path(client.ip + "-1")
    while not socket.exists():  # ZMQ would retry anyway; this just notices a dead kernel
        if process.poll() is not None or time.monotonic() > deadline:
            raise GraderError("kernel exited or never bound its sockets")
        time.sleep(0.05)
    client.start_channels()
    client.wait_for_ready(timeout=max(1.0, deadline - time.monotonic()))
    if process.poll() is not None:
        raise GraderError("kernel exited during startup")
