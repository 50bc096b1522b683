"""CPU time the kernel's own threads spent on one core: work a sandbox can queue there itself.

A system call can hand work to a kernel thread on every core and wait for it. ``mbind`` or
``migrate_pages`` with ``MPOL_MF_MOVE``, ``mlock`` and others drain each core's per-CPU page
lists through a kworker bound to that core; reclaim and compaction wake more. On the grading
core that kworker preempts the submission's main thread, which then waits for its core behind
a task that is not the submission's own: to the run-queue counters it looks exactly like a
busy machine (issue 38, class 4). A submission must not be able to summon a disturbance, so
the stall rule (graders/sandbox/containment.py, ``stalled_between``) counts kernel threads'
time on the core as the submission's own. Kernel work that a neighbour queues on the core is
small (microseconds a drain) and, on a CPU, slows both calls of a relative curve's round.

Which threads: every child of ``kthreadd`` (pid 2) that is bound to the core (kworker/N:*,
ksoftirqd/N, migration/N ...), all of whose time is spent there, and each unbound one
(kworker/u*, kswapd, kcompactd) whose last CPU was the core at either reading, which is
as close as /proc comes to saying it ran there. Where kthreadd is not visible (a worker in a
pid namespace of its own) nothing can be read and the reading is empty: stalls are then judged
as before this module.
"""

from __future__ import annotations

import contextlib

KTHREADD = 2
# /proc/<pid>/stat, counted from the field after the command name (state is 0): "processor".
_PROCESSOR_FIELD = 36


def _children_of_kthreadd() -> list[int]:
    """Every kernel thread's pid (kthreadd forks them all); empty where it is not visible."""
    try:
        with open(f"/proc/{KTHREADD}/task/{KTHREADD}/children") as handle:
            return [int(pid) for pid in handle.read().split()]
    except (OSError, ValueError):
        return []


def _allowed_cpus(pid: int) -> set[int] | None:
    """The CPUs a thread may run on (Cpus_allowed_list), None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("Cpus_allowed_list:"):
                    return parse_cpu_list(line.split(":", 1)[1])
    except (OSError, ValueError):
        return None
    return None


def parse_cpu_list(text: str) -> set[int]:
    """'0-3,6' -> {0, 1, 2, 3, 6}."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def _run_ns(pid: int) -> int | None:
    """The thread's time on a CPU in ns (schedstat), None when it is gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _last_cpu(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[_PROCESSOR_FIELD])
    except (OSError, ValueError, IndexError):
        return None


# Per kernel thread: (ns on a CPU so far, whether it is on the core: bound to it, or last
# seen there).
Reading = dict[int, tuple[int, bool]]


class CoreKernelTime:
    """Reads, for one core, the CPU time of each kernel thread that may have run there.

    Which threads may run on the core is remembered per pid: a kernel thread's affinity does
    not change while it lives, and the threads come and go far more slowly than readings."""

    def __init__(self, core: int) -> None:
        self.core = core
        self._allowed: dict[int, set[int]] = {}

    def read(self) -> Reading:
        found: Reading = {}
        for pid in _children_of_kthreadd():
            allowed = self._allowed.get(pid)
            if allowed is None:
                allowed = _allowed_cpus(pid)
                if allowed is None:
                    continue
                self._allowed[pid] = allowed
            if self.core not in allowed:
                continue
            ran = _run_ns(pid)
            if ran is not None:
                found[pid] = (ran, allowed == {self.core} or _last_cpu(pid) == self.core)
        return found

    @staticmethod
    def between(before: Reading, after: Reading) -> int:
        """ns the kernel's threads ran on the core between two readings: bound threads in
        full, unbound ones when either reading found them there. A thread born in between
        counts from 0; one that died in between is not seen."""
        total = 0
        for pid, (ran, here) in after.items():
            was, was_here = before.get(pid, (0, False))
            if here or was_here:
                total += max(ran - was, 0)
        return total


def visible() -> bool:
    """Whether the kernel's threads can be read here (kthreadd is in our pid namespace)."""
    with contextlib.suppress(OSError), open(f"/proc/{KTHREADD}/comm") as handle:
        return handle.read().strip() == "kthreadd"
    return False
