"""Limits that hold for a sandbox's whole process tree, a freezer, and CPU time read from outside.

Per-process limits (RLIMIT_AS, RLIMIT_NPROC) are not enough: four forked children each stay
under RLIMIT_AS while together they hold several times the memory limit. A
:class:`Containment` accounts for the whole tree instead, with the best mechanism the host
offers, tried in this order (``GRADERS_CONTAINMENT`` forces one, which is how the tests
exercise every fallback):

``cgroup-v1``
    one group per sandbox in each of the memory, pids, cpuset, cpuacct and freezer
    hierarchies (root only).
``cgroup-v2``
    one group in a delegated cgroup2 directory with memory, pids and cpu(set) controllers.
``signals``
    no writable groups: SIGSTOP/SIGCONT every task of the tree, CPU time summed from
    /proc, and a trusted watchdog thread that kills the tree when its memory passes the limit.

The sandbox must *start* inside its groups (:meth:`Containment.launcher`): moving it in
afterwards leaves a window in which student code runs, forks and allocates unaccounted.

Groups live in a parent folder named ``graders`` and are named for the worker process that
owns them (pid, start time so a reused pid is not mistaken for the owner, and pid namespace
so another container's workers are left alone), which lets
:func:`sweep_stale_groups` find and remove what a dead worker left behind.
"""

from __future__ import annotations

import abc
import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from graders.errors import GraderError
from graders.sandbox import kernel_threads

KINDS = ("cgroup-v1", "cgroup-v2", "signals")
CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT = "graders"
V1_CONTROLLERS = ("memory", "pids", "cpuset", "cpuacct", "freezer")
FREEZE_TIMEOUT_S = 2.0
SPIN_S = 0.02  # a freeze normally completes within microseconds
KILL_TIMEOUT_S = 10.0
WATCHDOG_PERIOD_S = 0.05
_NAME = re.compile(r"^w(\d+)\.(\d+)\.(\d+)-")
_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
# Joins every group (one cgroup.procs/tasks file per argument up to "--"), then execs the
# real command: the sandbox's first instruction already runs inside its groups.
_JOIN_SCRIPT = (
    'while [ "$#" -gt 0 ] && [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; '
    'shift; exec "$@"'
)


# ---------------------------------------------------------------------------- /proc helpers
def _stat_fields(pid: int | str, task: int | str | None = None) -> list[str]:
    """Fields of /proc/<pid>[/task/<tid>]/stat after the command name (field 3 onwards)."""
    path = f"/proc/{pid}/stat" if task is None else f"/proc/{pid}/task/{task}/stat"
    with open(path) as handle:
        return handle.read().rsplit(")", 1)[1].split()


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22), None when it is gone."""
    try:
        return int(_stat_fields(pid)[19])
    except (OSError, IndexError, ValueError):
        return None


def process_tree(root: int) -> list[int]:
    """``root`` (when alive) and all its descendants, by a scan of /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            children.setdefault(int(_stat_fields(entry.name)[1]), []).append(int(entry.name))
    found = [root] if os.path.exists(f"/proc/{root}") else []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def threads(pid: int) -> list[int]:
    try:
        return [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _schedstat(tid: int) -> tuple[int, int]:
    """(ns on the CPU, ns waiting on a run queue) of one task; zeros when it is gone."""
    try:
        with open(f"/proc/{tid}/schedstat") as handle:
            fields = handle.read().split()
        return int(fields[0]), int(fields[1])
    except (OSError, IndexError, ValueError):
        return 0, 0


# Per task (ns on the CPU, ns waiting on a run queue), or the pressure total in ns.
WaitMark = int | dict[int, tuple[int, int]]


@dataclass(frozen=True)
class StallMark:
    """A reading to pass to :func:`stalled_between`."""

    waited: WaitMark
    # CPU time of the kernel's threads on the sandbox's core (graders/sandbox/kernel_threads.py).
    kernel: kernel_threads.Reading = field(default_factory=dict)


def _psi_full_ns(path: Path) -> int:
    """The ``full`` CPU pressure total of a cgroup, in ns: the time during which every
    runnable task of the group waited for a CPU and none of them ran."""
    for line in _read(path).splitlines():
        if line.startswith("full "):
            return int(line.rsplit("total=", 1)[1]) * 1000
    raise ValueError(f"{path} has no full line")


def waited_between(before: WaitMark, after: WaitMark, cpu_ns: int) -> int:
    """Nanoseconds between two marks during which the sandbox wanted its core and something
    else had it. A sleep of its own is idle time, not a wait; its own threads taking turns on
    the core are its own doing, not a wait either.

    Pressure (cgroup v2, the kernel's ``full`` figure) says exactly that. From each task's
    own counters it is bounded from below: while a task waited on the run queue, the core ran
    either the sandbox's other tasks (at most ``cpu_ns``, the whole group's CPU time in
    between, exited tasks included, less the task's own) or something else. So the wait
    beyond what its siblings could have taken is foreign to the group.
    """
    if isinstance(before, int) and isinstance(after, int):
        return max(after - before, 0)
    if isinstance(before, int) or isinstance(after, int):
        return 0  # the group changed kind between the marks: excuse nothing
    foreign = 0
    for tid, (cpu, delay) in after.items():
        was_cpu, was_delay = before.get(tid, (0, 0))
        ran = cpu - was_cpu
        foreign = max(foreign, (delay - was_delay) - (cpu_ns - ran))
    return foreign


def stalled_between(before: StallMark, after: StallMark, cpu_ns: int) -> int:
    """Nanoseconds between two marks during which the sandbox was kept from its core by
    something it did not cause: the only disturbance a re-measurement may excuse.

    The wait behind tasks outside the group (:func:`waited_between`), less the time the
    kernel's own threads ran on the core: a sandbox's system calls can queue kernel work
    there at will (a kworker draining per-CPU lists for ``mbind``), so that time is the
    submission's own, however the kernel accounts it (issue 38, class 4).
    """
    waited = waited_between(before.waited, after.waited, cpu_ns)
    kernel = kernel_threads.CoreKernelTime.between(before.kernel, after.kernel)
    return max(waited - kernel, 0)


def ns_pid(tid: int) -> tuple[int, ...]:
    """The NSpid line of a task: its pid in each pid namespace, outermost first."""
    try:
        with open(f"/proc/{tid}/status") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return tuple(int(value) for value in line.split()[1:])
    except (OSError, ValueError):
        pass
    return ()


def _signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def _alive(pid: int) -> bool:
    """Running or stopped (a zombie has already released everything it held)."""
    try:
        return _stat_fields(pid)[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _pid_namespace() -> int:
    """Our pid namespace's inode: pids in a group name mean something only inside it."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def owner_alive(name: str) -> bool:
    """Is the worker that a group's name encodes still running? Names we cannot judge (not
    ours, or from another container's pid namespace sharing these hierarchies) count as alive."""
    match = _NAME.match(name)
    if match is None or int(match.group(3)) != _pid_namespace():
        return True
    return start_time(int(match.group(1))) == int(match.group(2))


def group_name(slot: int, owner: int | None = None) -> str:
    """A unique group name that encodes its owning worker (pid, start time, pid namespace)."""
    owner = os.getpid() if owner is None else owner
    born = start_time(owner) or 0
    return f"w{owner}.{born}.{_pid_namespace()}-s{slot}-{time.monotonic_ns()}"


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _read(path: Path) -> str:
    return path.read_text().strip()


def _rmdir(path: Path) -> bool:
    for _ in range(40):
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.05)
    return False


def _tasks_in(files: Iterable[Path]) -> list[int]:
    found: set[int] = set()
    for path in files:
        with contextlib.suppress(OSError, ValueError):
            found.update(int(line) for line in path.read_text().split())
    return sorted(found)


# ---------------------------------------------------------------------------- the interface
class Containment(abc.ABC):
    """Whole-tree limits, freezing and accounting for one sandbox."""

    kind: str = ""
    #: a cpuset confines the tree to the slot's core (sched_setaffinity cannot undo it)
    pinned: bool = False

    def __init__(self, memory_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        self.root_pid: int | None = None
        # The kernel's threads on the sandbox's core, once :func:`create` knows the core.
        self.core_kernel: kernel_threads.CoreKernelTime | None = None

    def launcher(self) -> list[str]:
        """An argv prefix that joins the groups and then execs the rest of the argv."""
        files = self.join_files()
        if not files:
            return []
        return ["/bin/sh", "-c", _JOIN_SCRIPT, "graders-join", *map(str, files), "--"]

    def join_files(self) -> list[Path]:
        return []

    def attach(self, root_pid: int) -> None:
        """Called once the sandbox runs, with the pid of its outermost process."""
        self.root_pid = root_pid

    @abc.abstractmethod
    def pids(self) -> list[int]:
        """Host ids of every task (threads included) of the sandbox."""

    @abc.abstractmethod
    def freeze(self) -> None:
        """Return only once every task is frozen; kill the tree and raise if that takes 2 s."""

    @abc.abstractmethod
    def thaw(self) -> None: ...

    @abc.abstractmethod
    def cpu_ns(self) -> int:
        """CPU time of the whole tree, including threads and processes that already exited."""

    def stall_mark(self) -> StallMark:
        """A reading to pass to :func:`stalled_between`: the time the sandbox was kept from
        its core by others (see there). The kernel's pressure figure where the sandbox has a
        cgroup v2 group (``psi_file``), else each task's own counters, and the CPU time of the
        kernel's threads on its core."""
        kernel = self.core_kernel.read() if self.core_kernel is not None else {}
        psi = self.psi_file()
        if psi is not None:
            with contextlib.suppress(OSError, ValueError):
                return StallMark(_psi_full_ns(psi), kernel)
        return StallMark({tid: _schedstat(tid) for tid in self.pids()}, kernel)

    def psi_file(self) -> Path | None:
        """The sandbox's own ``cpu.pressure`` (None where it has no cgroup v2 group)."""
        return None

    @abc.abstractmethod
    def memory_peak(self) -> int:
        """The most memory the tree held at once, in bytes (as far as it was measured)."""

    @abc.abstractmethod
    def oom_killed(self) -> bool: ...

    @abc.abstractmethod
    def kill(self) -> None:
        """SIGKILL every task and wait until none is left."""

    @abc.abstractmethod
    def remove(self) -> None:
        """Release the groups (after :meth:`kill`)."""

    def freeze_failed(self, detail: str) -> GraderError:
        self.kill()
        return GraderError(f"the sandbox could not be frozen within {FREEZE_TIMEOUT_S} s: {detail}")


# ---------------------------------------------------------------------------- cgroup v1
def _wait_for(done: Callable[[], bool], why: Callable[[], str], box: Containment) -> None:
    """Poll until the group reports frozen: spinning first, since the freeze ends a timed
    window and a sleep's granularity (a millisecond or two) would land in the figure."""
    spin_until = time.perf_counter() + SPIN_S
    deadline = time.monotonic() + FREEZE_TIMEOUT_S
    while not done():
        if time.monotonic() > deadline:
            raise box.freeze_failed(why())
        if time.perf_counter() > spin_until:
            time.sleep(0.001)


def _own_v1_path(controller: str) -> str | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def v1_parents() -> dict[str, Path]:
    """The ``graders`` folder of each v1 hierarchy, under our own group there."""
    parents = {}
    for controller in V1_CONTROLLERS:
        own = _own_v1_path(controller)
        if own is None:
            continue
        parents[controller] = CGROUP_ROOT / controller / own.strip("/") / PARENT
    return parents


def _v1_unavailable() -> str | None:
    parents = v1_parents()
    missing = [c for c in V1_CONTROLLERS if c not in parents]
    if missing:
        return f"no cgroup v1 hierarchy for {', '.join(missing)}"
    for controller, parent in parents.items():
        if not os.access(parent if parent.exists() else parent.parent, os.W_OK):
            return f"{parent.parent} is not writable (cgroup v1 {controller})"
    return None


class CgroupV1(Containment):
    kind = "cgroup-v1"

    def __init__(self, name: str, memory_bytes: int, nproc: int, core: int | None) -> None:
        super().__init__(memory_bytes)
        self.dirs: dict[str, Path] = {}
        self.pressure: Path | None = None
        try:
            for controller, parent in v1_parents().items():
                if not parent.exists():
                    parent.mkdir(exist_ok=True)
                    if controller == "cpuset":  # a cpuset without cpus/mems admits no task
                        for key in ("cpuset.cpus", "cpuset.mems"):
                            _write(parent / key, _read(parent.parent / key))
                path = parent / name
                path.mkdir()
                self.dirs[controller] = path
            memory = self.dirs["memory"]
            with contextlib.suppress(OSError):
                _write(memory / "memory.swappiness", "0")
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():  # swap accounting enabled
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            _write(self.dirs["pids"] / "pids.max", str(nproc))
            cpuset = self.dirs["cpuset"]
            cpus = str(core) if core is not None else _read(cpuset.parent / "cpuset.cpus")
            _write(cpuset / "cpuset.cpus", cpus)
            _write(cpuset / "cpuset.mems", _read(cpuset.parent / "cpuset.mems"))
            self.pinned = core is not None
        except OSError as exc:
            self.remove()
            raise GraderError(f"could not set up the sandbox's cgroup v1 groups: {exc}") from exc
        self.pressure = _pressure_group(name)

    def join_files(self) -> list[Path]:
        # The pressure group first: attach() waits on the last file as the sign of all.
        pressure = [self.pressure / "cgroup.procs"] if self.pressure else []
        return pressure + [path / "cgroup.procs" for path in self.dirs.values()]

    def psi_file(self) -> Path | None:
        return self.pressure / "cpu.pressure" if self.pressure else None

    def attach(self, root_pid: int) -> None:
        super().attach(root_pid)
        last = self.join_files()[-1]  # the launcher joins in order: the last one means all
        _wait_joined(lambda: _tasks_in([last]), root_pid)

    def pids(self) -> list[int]:
        return _tasks_in([self.dirs["cpuacct"] / "tasks"])

    def _processes(self) -> list[int]:
        return _tasks_in([path / "cgroup.procs" for path in self.dirs.values()])

    def freeze(self) -> None:
        state = self.dirs["freezer"] / "freezer.state"
        _write(state, "FROZEN")
        _wait_for(
            lambda: _read(state) == "FROZEN", lambda: f"freezer.state stayed {_read(state)}", self
        )

    def thaw(self) -> None:
        with contextlib.suppress(OSError):
            _write(self.dirs["freezer"] / "freezer.state", "THAWED")

    def cpu_ns(self) -> int:
        return int(_read(self.dirs["cpuacct"] / "cpuacct.usage"))

    def memory_peak(self) -> int:
        return int(_read(self.dirs["memory"] / "memory.max_usage_in_bytes"))

    def oom_killed(self) -> bool:
        with contextlib.suppress(OSError, ValueError):
            control = _read(self.dirs["memory"] / "memory.oom_control")
            for line in control.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        return False

    def kill(self) -> None:
        if "freezer" in self.dirs:
            _kill_group(self._processes, self.thaw, self.root_pid)

    def remove(self) -> None:
        for path in self.dirs.values():
            _rmdir(path)
        if self.pressure is not None:
            _rmdir(self.pressure)


def _pressure_group(name: str) -> Path | None:
    """A group of the cgroup v2 hierarchy mounted beside the v1 ones (``unified``), with no
    controller, only so that the kernel keeps the sandbox's CPU pressure (stall_mark). It is
    where the v2 sandbox groups would go, so the stale sweep finds it too. None where that
    hierarchy is missing, not writable or keeps no pressure."""
    parent = v2_parent()
    if parent is None:
        return None
    path = parent / name
    try:
        parent.mkdir(exist_ok=True)
        path.mkdir()
    except OSError:
        return None
    if (path / "cpu.pressure").is_file():
        return path
    _rmdir(path)
    return None


def _kill_group(
    members: Callable[[], list[int]], thaw: Callable[[], None], root: int | None = None
) -> None:
    """Thaw (a frozen v1 task ignores SIGKILL until thawed), SIGKILL, wait until empty.

    ``root`` (bwrap's outer process, trusted) is killed last: it reaps the namespace's init
    once that dies, so no zombie is orphaned to a host init that might never reap it."""
    deadline = time.monotonic() + KILL_TIMEOUT_S
    while True:
        thaw()
        left = members()
        if not left or time.monotonic() > deadline:
            return
        inner = [pid for pid in left if pid != root]
        _signal_all(inner or left, signal.SIGKILL)
        time.sleep(0.01)


def _wait_joined(members: Callable[[], list[int]], root: int) -> None:
    """Until the launcher has put ``root`` in its groups (or ``root`` is gone)."""
    deadline = time.monotonic() + 10
    while root not in members() and _alive(root) and time.monotonic() < deadline:
        time.sleep(0.001)


# ---------------------------------------------------------------------------- cgroup v2
def _own_v2_dir() -> Path | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    relative = next((line[3:] for line in lines if line.startswith("0::")), None)
    if relative is None:
        return None
    for mount in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        candidate = mount / relative.strip("/")
        if (candidate / "cgroup.controllers").is_file():
            return candidate
    return None


_V2_NEEDED = ("memory", "pids")


def v2_parent() -> Path | None:
    base = _own_v2_dir()
    return None if base is None else base / PARENT


def _v2_unavailable() -> str | None:
    base = _own_v2_dir()
    if base is None:
        return "no cgroup2 hierarchy"
    controllers = _read(base / "cgroup.controllers").split()
    missing = [c for c in _V2_NEEDED if c not in controllers]
    if missing or not ({"cpu", "cpuset"} & set(controllers)):
        return f"{base} lacks controllers (has: {' '.join(controllers) or 'none'})"
    if not os.access(base, os.W_OK):
        return f"{base} is not writable (not delegated to this user)"
    return None


class CgroupV2(Containment):
    kind = "cgroup-v2"

    def __init__(self, name: str, memory_bytes: int, nproc: int, core: int | None) -> None:
        super().__init__(memory_bytes)
        parent = v2_parent()
        assert parent is not None
        self.path = parent / name
        self.created = False
        try:
            wanted = [
                c
                for c in (*_V2_NEEDED, "cpu", "cpuset")
                if c in _read(parent.parent / "cgroup.controllers").split()
            ]
            parent.mkdir(exist_ok=True)
            for folder in (parent.parent, parent):
                enabled = _read(folder / "cgroup.subtree_control").split()
                missing = [c for c in wanted if c not in enabled]
                if missing:
                    _write(folder / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))
            self.path.mkdir()
            self.created = True
            if not (self.path / "cgroup.freeze").exists():
                raise OSError("cgroup.freeze is missing (kernel older than 5.2)")
            _write(self.path / "memory.max", str(memory_bytes))
            with contextlib.suppress(OSError):
                _write(self.path / "memory.swap.max", "0")
            _write(self.path / "pids.max", str(nproc))
            if core is not None and (self.path / "cpuset.cpus").exists():
                _write(self.path / "cpuset.cpus", str(core))
                self.pinned = True
        except OSError as exc:
            self.remove()
            raise GraderError(f"could not set up the sandbox's cgroup v2 group: {exc}") from exc

    def join_files(self) -> list[Path]:
        return [self.path / "cgroup.procs"]

    def psi_file(self) -> Path | None:
        return self.path / "cpu.pressure"

    def attach(self, root_pid: int) -> None:
        super().attach(root_pid)
        last = self.join_files()[-1]  # the launcher joins in order: the last one means all
        _wait_joined(lambda: _tasks_in([last]), root_pid)

    def pids(self) -> list[int]:
        return _tasks_in([self.path / "cgroup.threads"])

    def _processes(self) -> list[int]:
        return _tasks_in([self.path / "cgroup.procs"])

    def _events(self) -> dict[str, str]:
        with contextlib.suppress(OSError):
            return dict(
                line.split(" ", 1) for line in _read(self.path / "cgroup.events").splitlines()
            )
        return {}

    def freeze(self) -> None:
        _write(self.path / "cgroup.freeze", "1")
        _wait_for(
            lambda: self._events().get("frozen") == "1",
            lambda: "cgroup.events never said frozen 1",
            self,
        )

    def thaw(self) -> None:
        with contextlib.suppress(OSError):
            _write(self.path / "cgroup.freeze", "0")

    def cpu_ns(self) -> int:
        for line in _read(self.path / "cpu.stat").splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) * 1000
        return 0

    def memory_peak(self) -> int:
        with contextlib.suppress(OSError, ValueError):
            return int(_read(self.path / "memory.peak"))
        return int(_read(self.path / "memory.current"))

    def oom_killed(self) -> bool:
        with contextlib.suppress(OSError, ValueError):
            for line in _read(self.path / "memory.events").splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        return False

    def kill(self) -> None:
        if not self.created:
            return
        with contextlib.suppress(OSError):
            _write(self.path / "cgroup.kill", "1")
        _kill_group(self._processes, self.thaw, self.root_pid)

    def remove(self) -> None:
        if self.created:
            _rmdir(self.path)


# ---------------------------------------------------------------------------- signals
def _tree_memory(processes: Iterable[int]) -> int:
    """Bytes the tree holds: proportional RSS (shared pages split, shmem included) plus
    memfd files, which hold memory while no process maps them. Raises OSError when a live
    process's counters cannot be read (PermissionError: we may not inspect it)."""
    total = 0
    seen_files: set[tuple[int, int]] = set()
    for pid in processes:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as handle:
                for line in handle:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except FileNotFoundError:
            continue
        except ProcessLookupError:
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:"):
                        continue
                    info = os.stat(f"/proc/{pid}/fd/{fd}")
                    if (info.st_dev, info.st_ino) not in seen_files:
                        seen_files.add((info.st_dev, info.st_ino))
                        total += info.st_blocks * 512
    return total


class Signals(Containment):
    """No writable groups: the tree is found through /proc, stopped with SIGSTOP, and a
    trusted watchdog kills it when its memory passes the limit."""

    kind = "signals"

    def __init__(self, memory_bytes: int) -> None:
        super().__init__(memory_bytes)
        try:
            _tree_memory([os.getpid()])
        except OSError as exc:
            raise GraderError(
                f"cannot read process memory from /proc here ({exc}), so the sandbox's memory "
                "cannot be bounded; refusing to grade. Run the worker where /proc is readable "
                "or give it writable cgroups."
            ) from exc
        self.peak = 0
        self.killed_for_memory = False
        self.highest_cpu_ns = 0
        self.stopping = threading.Event()
        self.watchdog: threading.Thread | None = None
        self.lock = threading.Lock()

    def attach(self, root_pid: int) -> None:
        super().attach(root_pid)
        try:
            _tree_memory([root_pid])
        except OSError as exc:
            self.kill()
            raise GraderError(
                f"cannot read the sandbox's memory from /proc ({exc}); refusing to grade"
            ) from exc
        self.watchdog = threading.Thread(target=self._watch, name="sandbox-memory", daemon=True)
        self.watchdog.start()

    def _watch(self) -> None:
        while not self.stopping.wait(WATCHDOG_PERIOD_S):
            tree = self._tree()
            if not tree:
                return
            try:
                used = _tree_memory(tree)
            except OSError:
                used = self.memory_bytes + 1  # cannot measure it: do not let it run unbounded
            self.peak = max(self.peak, used)
            if used > self.memory_bytes:
                self.killed_for_memory = True
                self.kill()
                return

    def _tree(self) -> list[int]:
        return [] if self.root_pid is None else process_tree(self.root_pid)

    def pids(self) -> list[int]:
        return [tid for pid in self._tree() for tid in threads(pid)]

    def freeze(self) -> None:
        deadline = time.monotonic() + FREEZE_TIMEOUT_S
        while True:
            before = self._tree()
            _signal_all(before, signal.SIGSTOP)
            after = self._tree()
            # A SIGSTOP does not abort a fork already under way, so a child can appear after
            # its parent was signalled, even after the second listing. Once every process
            # listed reads stopped, none can fork any more: a third listing that still
            # matches proves nothing slipped in. (New threads join a group stop themselves.)
            settled = before == after and all(self._stopped(pid) for pid in after)
            if settled and self._tree() == after:
                return
            if time.monotonic() > deadline:
                raise self.freeze_failed("its processes kept changing or would not stop")
            time.sleep(0.001)

    @staticmethod
    def _stopped(pid: int) -> bool:
        for tid in threads(pid):
            try:
                if _stat_fields(pid, tid)[0] not in ("T", "t", "Z", "X"):
                    return False
            except (OSError, IndexError):
                continue  # exited meanwhile
        return True

    def thaw(self) -> None:
        _signal_all(self._tree(), signal.SIGCONT)

    def cpu_ns(self) -> int:
        """Per live process, its threads' exact schedstat time (or the thread group's
        utime+stime, which also holds exited threads, when larger), plus the times of the
        children it has reaped (cutime+cstime). Never decreases between calls."""
        total = 0
        for pid in self._tree():
            try:
                fields = _stat_fields(pid)
                own_ticks, reaped_ticks = (
                    int(fields[11]) + int(fields[12]),
                    int(fields[13]) + int(fields[14]),
                )
            except (OSError, IndexError, ValueError):
                continue
            live = sum(_schedstat(tid)[0] for tid in threads(pid))
            total += max(live, own_ticks * _TICK_NS) + reaped_ticks * _TICK_NS
        with self.lock:
            self.highest_cpu_ns = max(self.highest_cpu_ns, total)
            return self.highest_cpu_ns

    def memory_peak(self) -> int:
        return self.peak

    def oom_killed(self) -> bool:
        return self.killed_for_memory

    def kill(self) -> None:
        """Stop the tree first, so nothing forks between the listing and the SIGKILL, then
        kill every member, the root (bwrap's outer process, which reaps the rest) last."""
        deadline = time.monotonic() + KILL_TIMEOUT_S
        while time.monotonic() < deadline:
            tree = [pid for pid in self._tree() if _alive(pid)]
            if not tree:
                return
            inner = [pid for pid in tree if pid != self.root_pid]
            _signal_all(inner, signal.SIGSTOP)
            _signal_all(inner or tree, signal.SIGKILL)
            _signal_all(tree, signal.SIGCONT)  # a stopped parent cannot reap
            time.sleep(0.01)

    def remove(self) -> None:
        self.stopping.set()
        if self.watchdog is not None and self.watchdog is not threading.current_thread():
            self.watchdog.join(timeout=1)


# ---------------------------------------------------------------------------- choosing
def unavailable_reason(kind: str) -> str | None:
    """Why ``kind`` cannot be used here, or None when it can."""
    if kind == "cgroup-v1":
        return _v1_unavailable()
    if kind == "cgroup-v2":
        return _v2_unavailable()
    if kind == "signals":
        try:
            _tree_memory([os.getpid()])
        except OSError as exc:
            return f"/proc memory counters unreadable: {exc}"
        return None
    return f"unknown containment {kind!r} (known: {', '.join(KINDS)})"


def create(*, slot: int, memory_bytes: int, nproc: int, core: int | None) -> Containment:
    """The first containment that works here (or the one ``GRADERS_CONTAINMENT`` names)."""
    forced = os.environ.get("GRADERS_CONTAINMENT", "").strip().lower()
    if forced and forced not in KINDS:
        raise GraderError(f"GRADERS_CONTAINMENT={forced!r} is not one of {', '.join(KINDS)}")
    problems = []
    for kind in [forced] if forced else list(KINDS):
        reason = unavailable_reason(kind)
        if reason is not None:
            problems.append(f"{kind}: {reason}")
            continue
        try:
            box: Containment
            if kind == "cgroup-v1":
                box = CgroupV1(group_name(slot), memory_bytes, nproc, core)
            elif kind == "cgroup-v2":
                box = CgroupV2(group_name(slot), memory_bytes, nproc, core)
            else:
                box = Signals(memory_bytes)
        except GraderError as exc:
            if forced:
                raise
            problems.append(f"{kind}: {exc}")
            continue
        if core is not None:
            box.core_kernel = kernel_threads.CoreKernelTime(core)
        return box
    raise GraderError("no way to contain the sandbox here: " + "; ".join(problems))


def _stale_v1_names() -> set[str]:
    names: set[str] = set()
    for parent in v1_parents().values():
        with contextlib.suppress(OSError):
            names.update(entry.name for entry in os.scandir(parent) if entry.is_dir())
    return {name for name in names if not owner_alive(name)}


def sweep_stale_groups() -> list[str]:
    """Thaw, kill and remove every group whose owning worker is gone; returns their names.

    A worker killed mid-grading (OOM killer, SIGKILL, power loss of the container) leaves
    its groups behind, possibly frozen with student processes still inside them.
    """
    swept = []
    parents = v1_parents()
    for name in sorted(_stale_v1_names()):
        dirs = {c: p / name for c, p in parents.items() if (p / name).is_dir()}
        freezer = dirs.get("freezer")

        def thaw(folder: Path | None = freezer) -> None:
            if folder is not None:
                with contextlib.suppress(OSError):
                    _write(folder / "freezer.state", "THAWED")

        def members(folders: dict[str, Path] = dirs) -> list[int]:
            return _tasks_in([folder / "cgroup.procs" for folder in folders.values()])

        _kill_group(members, thaw)
        if all(_rmdir(folder) for folder in dirs.values()):
            swept.append(name)
    parent = v2_parent()
    if parent is not None and parent.is_dir():
        for entry in list(os.scandir(parent)):
            if not entry.is_dir() or owner_alive(entry.name):
                continue
            folder = Path(entry.path)

            def thaw_v2(folder: Path = folder) -> None:
                with contextlib.suppress(OSError):
                    _write(folder / "cgroup.freeze", "0")

            def members_v2(folder: Path = folder) -> list[int]:
                return _tasks_in([folder / "cgroup.procs"])

            with contextlib.suppress(OSError):
                _write(folder / "cgroup.kill", "1")
            _kill_group(members_v2, thaw_v2)
            if _rmdir(folder):
                swept.append(entry.name)
    return swept
