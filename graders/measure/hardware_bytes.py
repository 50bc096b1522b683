"""Bytes measured by the hardware: the DRAM traffic of the student's kernels, from Nsight Compute.

The roofline figures divide the exercise's analytic byte count by the measured time: they
assume the kernels move exactly the ideal bytes. Where Nsight Compute (``ncu``) can read the
GPU's counters, one separate, untimed profiling run of the submission counts what the
kernels really read from and wrote to DRAM (``dram__bytes_read.sum``,
``dram__bytes_write.sum``), and the report sets that against the analytic minimum: "your
kernels moved 2.1x the ideal bytes: some data is written and read back, e.g. an
intermediate". Where ``ncu`` does not work (no ``ncu``, counters restricted to
administrators, gVisor, which does not proxy the profiler's interfaces), the report says so.

This module only builds the command, parses what ``ncu`` writes and words the result; the
grading flow runs the command (in the sandbox, outside any timed window) and calls
:func:`summarize`. Kernels cannot be told apart by who launched them, so the trusted
harness's own kernels (input fills, cache flushes) are left out by name (``ignore``), or
the run is limited to an NVTX range around the student's calls (``ncu_command(nvtx_range=)``).

Notes on ``ncu``'s options (Nsight Compute CLI): ``--target-processes all`` follows child
processes; ``--cache-control all`` flushes the caches before each profiled kernel, so each
kernel's DRAM bytes are its own; ``--clock-control none`` leaves the GPU's clocks alone
(locking them would disturb anything else timed on the same GPU; byte counts do not depend
on clocks); ``--csv --page raw --print-units base`` prints one row per kernel launch with
every value in base units (byte, nsecond); ``--log-file`` sends ncu's output, ``==PROF==``
lines included, to a file rather than the program's stdout.
"""

from __future__ import annotations

import csv
import functools
import re
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from graders.errors import GraderError
from graders.report.types import HardwareBytes
from graders.sandbox import cuda_tools, launch

READ_METRIC = "dram__bytes_read.sum"
WRITE_METRIC = "dram__bytes_write.sum"
DURATION_METRIC = "gpu__time_duration.sum"
METRICS = (READ_METRIC, WRITE_METRIC, DURATION_METRIC)

# Above this ratio to the analytic minimum, the kernels move data they need not move.
EXCESS_RATIO = 1.3
# Below this, the counters saw less than the minimum (data left in the L2 cache): say so.
SHORT_RATIO = 0.9

PROBE_TIMEOUT_S = 120.0
# sh -c: run "$@" (ncu and its target), then print the log file named by $1, keep its status.
_THEN_PRINT_LOG = 'log="$1"; shift; "$@"; code=$?; cat "$log" 2>/dev/null; exit $code'
_PROBE_SCRIPT = (
    "import torch\nx = torch.ones(1 << 20, device='cuda')\ny = x * 2\ntorch.cuda.synchronize()\n"
)

_BYTE_UNITS = {
    "byte": 1.0,
    "b": 1.0,
    "kbyte": 1e3,
    "kb": 1e3,
    "mbyte": 1e6,
    "mb": 1e6,
    "gbyte": 1e9,
    "gb": 1e9,
    "tbyte": 1e12,
    "tb": 1e12,
    "pbyte": 1e15,
    "kibyte": 1024.0,
    "kib": 1024.0,
    "mibyte": 1024.0**2,
    "mib": 1024.0**2,
    "gibyte": 1024.0**3,
    "gib": 1024.0**3,
}
_SECOND_UNITS = {
    "nsecond": 1e-9,
    "ns": 1e-9,
    "usecond": 1e-6,
    "us": 1e-6,
    "msecond": 1e-3,
    "ms": 1e-3,
    "second": 1.0,
    "s": 1.0,
}
# Messages of ncu (and the driver) that mean "the counters cannot be read here".
_NO_PERMISSION = ("ERR_NVGPUCTRPERM", "permission to access NVIDIA GPU Performance Counters")
_NOT_SUPPORTED = ("not supported", "unsupported", "ERR_NVGPUCTRUNSUPPORTED")


@dataclass(frozen=True)
class KernelBytes:
    """One profiled kernel launch: its name, its DRAM bytes and its duration (None: n/a)."""

    name: str
    read_bytes: float | None
    write_bytes: float | None
    duration_s: float | None = None

    @property
    def total_bytes(self) -> float | None:
        if self.read_bytes is None or self.write_bytes is None:
            return None
        return self.read_bytes + self.write_bytes


# -- the command ---------------------------------------------------------------------------


def ncu_path() -> str | None:
    """The ``ncu`` to run: ``$GRADERS_NCU``, else ``ncu`` on PATH, else the CUDA toolkit's,
    else the newest under /opt/nvidia/nsight-compute (graders/sandbox/cuda_tools.py, which
    also makes its folder visible inside a CUDA sandbox)."""
    return cuda_tools.ncu_path()


def ncu_command(
    output_csv: Path,
    *,
    ncu: str | None = None,
    nvtx_range: str | None = None,
    launch_count: int | None = None,
) -> list[str]:
    """The prefix that profiles every kernel a command's process tree launches.

    Put it before the command (``[*ncu_command(path), python, script, ...]``); ncu's CSV,
    one row per kernel launch, goes to ``output_csv`` (read it with :func:`parse_ncu_csv`),
    and the command's own stdout and stderr are left as they were. ``nvtx_range`` profiles
    only kernels launched inside that NVTX push/pop range (e.g. the one the harness opens
    around the student's calls); ``launch_count`` stops after that many kernels.
    """
    command = [
        ncu or ncu_path() or "ncu",
        "--target-processes", "all",
        "--kernel-name-base", "demangled",
        "--metrics", ",".join(METRICS),
        "--cache-control", "all",
        "--clock-control", "none",
        "--csv",
        "--page", "raw",
        "--print-units", "base",
        "--log-file", str(output_csv),
    ]  # fmt: skip
    if nvtx_range:
        command += ["--nvtx", "--nvtx-include", f"{nvtx_range}/"]
    if launch_count is not None:
        command += ["--launch-count", str(launch_count)]
    return command


# -- whether it works here -----------------------------------------------------------------

_cached: dict[str, str | None] = {}
_cache_lock = threading.Lock()


def ncu_unavailable_reason(*, refresh: bool = False, slot: int = 0) -> str | None:
    """None where ncu can count a kernel's DRAM bytes on this machine; else why not.

    Asked once per process (``refresh`` asks again), inside a CUDA sandbox of ``slot``, as
    the sandbox's user, because that is where a grading runs it (the sandbox's /opt is empty
    but for the folders bound into it, its uid has no groups): ``ncu --version``, then a tiny
    profiling run of one torch kernel whose CSV must carry its DRAM bytes. Typical reasons:
    no ncu; ncu not visible or not runnable in the sandbox; counters restricted to
    administrators (ERR_NVGPUCTRPERM); profiling not supported (gVisor, some virtual GPUs).
    """
    with _cache_lock:
        if refresh or "reason" not in _cached:
            _cached["reason"] = _probe(slot)
        return _cached["reason"]


def _probe(slot: int) -> str | None:
    ncu = ncu_path()
    if ncu is None:
        return "Nsight Compute (ncu) is not installed on this machine"
    try:
        version = launch.run_once([ncu, "--version"], device="cuda", slot=slot, timeout_s=30)
    except GraderError as exc:
        return f"ncu could not be asked inside the sandbox: {exc}"
    if version.returncode is None:
        return "`ncu --version` took over 30 s inside the sandbox"
    if version.returncode != 0:
        said = _first_line(version.stderr or version.stdout)
        return f"`ncu --version` failed inside the sandbox ({ncu}): {said}"
    # ncu's log in the sandbox's HOME, then printed: its output is all that comes back out
    # (the sandbox's uid may not reopen its own stdout through /proc once setpriv ran).
    log = f"{launch.SCRATCH_MOUNT}/home/ncu-probe.csv"
    profiled = [*ncu_command(Path(log), ncu=ncu), sys.executable, "-c", _PROBE_SCRIPT]
    command = ["/bin/sh", "-c", _THEN_PRINT_LOG, "sh", log, *profiled]
    try:
        run = launch.run_once(command, device="cuda", slot=slot, timeout_s=PROBE_TIMEOUT_S)
    except GraderError as exc:
        return f"a profiling probe with ncu could not start in the sandbox: {exc}"
    if run.returncode is None:
        return f"a profiling probe with ncu took over {PROBE_TIMEOUT_S:.0f} s"
    return probe_failure(run.stdout + "\n" + run.stderr, run.returncode)


def probe_failure(output: str, returncode: int) -> str | None:
    """Why a probe's output (ncu's log and the process's) shows the counters unreadable."""
    if any(marker in output for marker in _NO_PERMISSION):
        return (
            "the GPU's performance counters are restricted to administrators here "
            "(ERR_NVGPUCTRPERM; the driver's NVreg_RestrictProfilingToAdminUsers)"
        )
    errors = [line for line in output.splitlines() if line.lstrip().startswith("==ERROR==")]
    lowered = output.lower()
    if any(marker.lower() in lowered for marker in _NOT_SUPPORTED) and (errors or returncode):
        said = _first_line("\n".join(errors) or output)
        return f"ncu says profiling is not supported here: {said}"
    try:
        kernels = parse_ncu_csv(output)
    except ValueError:
        kernels = []
    if any(kernel.total_bytes is not None for kernel in kernels):
        return None
    if errors:
        return f"ncu failed: {_first_line(errors[0])}"
    if "No kernels were profiled" in output:
        return "ncu profiled no kernel of a probe that launches one"
    if returncode != 0:
        return f"a profiling probe with ncu failed (exit status {returncode})"
    return "ncu profiled a probe kernel but reported no DRAM bytes for it"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().removeprefix("==ERROR==").removeprefix("==WARNING==").strip()
        if line:
            return line[:300]
    return "no message"


# -- reading ncu's CSV ---------------------------------------------------------------------


def parse_ncu_csv(text: str) -> list[KernelBytes]:
    """Every kernel launch in ncu's CSV, in order: ``--page raw`` (one row per launch, one
    column per metric, a row of units under the header) or ``--page details`` (one row per
    metric: "Metric Name", "Metric Unit", "Metric Value"). Lines that are not CSV (ncu's
    ``==PROF==`` lines, a program's output) are skipped; values may carry units
    (byte...Gbyte, nsecond...second) and thousands separators. ValueError when a header
    lacks the kernel's name."""
    rows = list(csv.reader(line for line in text.splitlines() if line.lstrip().startswith('"')))
    kernels: list[KernelBytes] = []
    index = 0
    while index < len(rows):
        header = rows[index]
        if not header or header[0] != "ID":
            index += 1
            continue
        end = index + 1
        while end < len(rows) and not (rows[end] and rows[end][0] == "ID"):
            end += 1
        block = rows[index + 1 : end]
        if "Metric Name" in header:
            kernels += _details_block(header, block)
        else:
            kernels += _raw_block(header, block)
        index = end
    return kernels


def _column(header: list[str], name: str) -> int:
    if name not in header:
        raise ValueError(f"ncu's CSV has no {name!r} column: {header[:8]}")
    return header.index(name)


def _raw_block(header: list[str], rows: list[list[str]]) -> list[KernelBytes]:
    name_at = _column(header, "Kernel Name")
    units: list[str] = [""] * len(header)
    if rows and rows[0] and rows[0][0] == "":  # the units row: no ID
        units = rows[0] + [""] * (len(header) - len(rows[0]))
        rows = rows[1:]
    at = {metric: header.index(metric) for metric in METRICS if metric in header}

    def value(row: list[str], metric: str, scales: dict[str, float]) -> float | None:
        if metric not in at or at[metric] >= len(row):
            return None
        return _scaled(row[at[metric]], units[at[metric]], scales)

    return [
        _kernel(row[name_at], functools.partial(value, row))
        for row in rows
        if len(row) > name_at and row[0]
    ]


def _details_block(header: list[str], rows: list[list[str]]) -> list[KernelBytes]:
    id_at, name_at = _column(header, "ID"), _column(header, "Kernel Name")
    metric_at = _column(header, "Metric Name")
    unit_at, value_at = _column(header, "Metric Unit"), _column(header, "Metric Value")
    pid_at = header.index("Process ID") if "Process ID" in header else None
    order: list[tuple[str, str]] = []
    names: dict[tuple[str, str], str] = {}
    values: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
    for row in rows:
        if len(row) <= max(id_at, name_at, metric_at, unit_at, value_at):
            continue
        key = (row[pid_at] if pid_at is not None else "", row[id_at])
        if key not in values:
            order.append(key)
            names[key], values[key] = row[name_at], {}
        values[key][row[metric_at]] = (row[value_at], row[unit_at])

    def value(key: tuple[str, str], metric: str, scales: dict[str, float]) -> float | None:
        found = values[key].get(metric)
        return None if found is None else _scaled(found[0], found[1], scales)

    return [_kernel(names[key], functools.partial(value, key)) for key in order]


def _kernel(name: str, value: Callable[[str, dict[str, float]], float | None]) -> KernelBytes:
    """One kernel's row, whatever page it came from: ``value(metric, units)`` reads it."""
    return KernelBytes(
        name=name,
        read_bytes=value(READ_METRIC, _BYTE_UNITS),
        write_bytes=value(WRITE_METRIC, _BYTE_UNITS),
        duration_s=value(DURATION_METRIC, _SECOND_UNITS),
    )


def _scaled(text: str, unit: str, scales: dict[str, float]) -> float | None:
    number = _number(text)
    if number is None:
        return None
    unit = unit.strip().lower()
    if not unit:
        return number  # no units row: base units (--print-units base)
    scale = scales.get(unit)
    return None if scale is None else number * scale


_GROUPED_COMMAS = re.compile(r"-?\d{1,3}(,\d{3})+(\.\d+)?")
_GROUPED_DOTS = re.compile(r"-?\d{1,3}(\.\d{3})+(,\d+)?")


def _number(text: str) -> float | None:
    """A value as ncu prints it: "1,234,567", "1,234.5", "12.5", and in a locale with a
    decimal comma "1.234.567" or "9,5"; None for "n/a" and the like."""
    value = re.sub(r"[\s\u00a0\u202f']", "", text)
    if not value:
        return None
    if _GROUPED_COMMAS.fullmatch(value):
        value = value.replace(",", "")
    elif _GROUPED_DOTS.fullmatch(value) and (value.count(".") > 1 or "," in value):
        value = value.replace(".", "").replace(",", ".")
    elif value.count(",") == 1 and "." not in value:
        value = value.replace(",", ".")
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number == number and number not in (float("inf"), float("-inf")) else None


# -- the report ----------------------------------------------------------------------------


def summarize(
    kernels: Sequence[KernelBytes] | None,
    analytic_min_bytes: float | None,
    *,
    calls: int = 1,
    ignore: Iterable[str] = (),
    unavailable: str | None = None,
) -> HardwareBytes:
    """The report's ``hardware_bytes``: the kernels' DRAM bytes against the ideal.

    ``analytic_min_bytes`` is the exercise's bytes for one call (the roofline's figure);
    ``calls`` is how many calls the profiled run made, so the ideal is their product.
    Kernels whose name contains any of ``ignore`` (the harness's own) are left out.
    ``unavailable`` (ncu's reason, :func:`ncu_unavailable_reason`) gives the "not measured"
    entry; so do no kernels, or kernels whose counters ncu could not read.
    """
    if unavailable is not None:
        return not_measured(unavailable)
    if kernels is None:
        return not_measured("the profiling run produced no figures")
    patterns = [pattern for pattern in ignore if pattern]
    kept = [k for k in kernels if not any(pattern in k.name for pattern in patterns)]
    if not kept:
        return not_measured("ncu saw no kernel of yours in the profiling run")
    unread = [k for k in kept if k.total_bytes is None]
    if unread:
        return not_measured(
            f"ncu could not read the DRAM counters of {len(unread)} of your "
            f"{len(kept)} kernel launches"
        )
    read = sum(k.read_bytes or 0.0 for k in kept)
    write = sum(k.write_bytes or 0.0 for k in kept)
    total = read + write
    minimum = analytic_min_bytes * max(calls, 1) if analytic_min_bytes else None
    ratio = total / minimum if minimum else None
    return {
        "measured": True,
        "message": _message(total, read, write, minimum, ratio, len(kept)),
        "total_bytes": total,
        "read_bytes": read,
        "write_bytes": write,
        "minimum_bytes": minimum,
        "ratio_to_minimum": ratio,
        "kernels": len(kept),
    }


def not_measured(reason: str) -> HardwareBytes:
    """The entry for a machine (or a run) where the DRAM bytes could not be counted."""
    return {
        "measured": False,
        "message": f"DRAM bytes were not measured on this machine: {reason}.",
        "total_bytes": None,
        "read_bytes": None,
        "write_bytes": None,
        "minimum_bytes": None,
        "ratio_to_minimum": None,
        "kernels": 0,
    }


def _message(
    total: float, read: float, write: float, minimum: float | None, ratio: float | None, n: int
) -> str:
    split = f"DRAM reads {_size(read)}, writes {_size(write)}"
    if minimum is None or ratio is None:
        return f"Your kernels moved {_size(total)} ({split})."
    head = f"Your kernels moved {ratio:.1f}× the ideal {_size(minimum)} ({split})"
    if ratio > EXCESS_RATIO:
        if n > 1:
            return f"{head}: some data is written and read back, e.g. an intermediate."
        return (
            f"{head}: your kernel fetches more than it uses, e.g. strided or uncoalesced "
            "accesses that use part of each 32-byte sector, or data read more than once."
        )
    if ratio < SHORT_RATIO:
        return (
            f"{head}: less than the minimum, so part of the data never left the GPU's L2 "
            "cache (the problem is small enough to fit in it)."
        )
    return f"{head}: close to the minimum."


def _size(nbytes: float) -> str:
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if nbytes >= unit:
            return f"{nbytes / unit:.1f} {name}"
    return f"{nbytes:.0f} bytes"
