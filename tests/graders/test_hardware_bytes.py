"""graders/measure/hardware_bytes.py: ncu's command, its CSV, the probe, and the report's words.

The CSV samples are in the shapes Nsight Compute prints with ``--csv``: ``--page raw`` (one
row per kernel launch, one column per metric, a row of units under the header) and ``--page
details`` (one row per metric), among ``==PROF==`` lines. The probe runs a fake ``ncu`` (a
script) that answers as the real one does where it works and where it may not.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from graders.measure import hardware_bytes as hb
from graders.measure.hardware_bytes import (
    KernelBytes,
    ncu_command,
    ncu_unavailable_reason,
    not_measured,
    parse_ncu_csv,
    probe_failure,
    summarize,
)
from graders.report import schema

GIB = 1 << 30

RAW = textwrap.dedent(
    """\
    ==PROF== Connected to process 41213 (/usr/bin/python3.12)
    ==PROF== Profiling "vectorized_elementwise_kernel" - 0: 0%....50%....100% - 1 pass
    ==PROF== Profiling "scale_kernel" - 1: 0%....50%....100% - 1 pass
    ==PROF== Profiling "add_kernel" - 2: 0%....50%....100% - 1 pass
    ==PROF== Disconnected from process 41213
    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum"
    "","","","","","","","","","","","byte","byte","nsecond"
    "0","41213","python3.12","127.0.0.1","void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)","1","7","(128, 1, 1)","(65536, 1, 1)","0","9.0","1,024","33,554,432","14,272"
    "1","41213","python3.12","127.0.0.1","void scale_kernel<float>(const float *, float *, int)","1","7","(256, 1, 1)","(32768, 1, 1)","0","9.0","33,554,560","33,554,432","27,936"
    "2","41213","python3.12","127.0.0.1","add_kernel","1","7","(256, 1, 1)","(32768, 1, 1)","0","9.0","67,109,120","33,554,432","41,120"
    """  # noqa: E501
)

DETAILS = textwrap.dedent(
    """\
    ==PROF== Connected to process 5150 (/usr/bin/python3.12)
    ==PROF== Profiling "softmax_kernel" - 0: 0%....50%....100% - 1 pass
    ==PROF== Disconnected from process 5150
    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
    "0","5150","python3.12","127.0.0.1","softmax_kernel(float const*, float*, int, int)","1","7","(1024, 1, 1)","(8192, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","Mbyte","134.22"
    "0","5150","python3.12","127.0.0.1","softmax_kernel(float const*, float*, int, int)","1","7","(1024, 1, 1)","(8192, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","Kbyte","67,108.86"
    "0","5150","python3.12","127.0.0.1","softmax_kernel(float const*, float*, int, int)","1","7","(1024, 1, 1)","(8192, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","52.80"
    "1","5150","python3.12","127.0.0.1","reduce_kernel","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","Gbyte","0.5"
    "1","5150","python3.12","127.0.0.1","reduce_kernel","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","byte","256"
    "1","5150","python3.12","127.0.0.1","reduce_kernel","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","1.5"
    """  # noqa: E501
)


def test_ncu_command_profiles_every_kernel_of_the_tree_into_a_csv_file(tmp_path):
    out = tmp_path / "ncu.csv"
    command = ncu_command(out, ncu="/opt/ncu")
    assert command[0] == "/opt/ncu"

    def after(flag: str) -> str:
        return command[command.index(flag) + 1]

    assert after("--target-processes") == "all"
    assert after("--kernel-name-base") == "demangled"
    assert after("--metrics").split(",") == [
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "gpu__time_duration.sum",
    ]
    assert after("--page") == "raw" and "--csv" in command
    assert after("--print-units") == "base"
    assert after("--log-file") == str(out)
    assert after("--clock-control") == "none"  # never lock the clocks of a shared GPU
    assert "--nvtx" not in command and "--launch-count" not in command
    limited = ncu_command(out, ncu="ncu", nvtx_range="student", launch_count=50)
    assert limited[-5:] == ["--nvtx", "--nvtx-include", "student/", "--launch-count", "50"]


def test_raw_page():
    kernels = parse_ncu_csv(RAW)
    assert [k.name.split("(")[0] for k in kernels] == [
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char *, 1>>",
        "void scale_kernel<float>",
        "add_kernel",
    ]
    assert kernels[1] == KernelBytes(
        "void scale_kernel<float>(const float *, float *, int)",
        33_554_560.0,
        33_554_432.0,
        pytest.approx(27_936e-9),  # type: ignore[arg-type]
    )
    assert kernels[2].total_bytes == 67_109_120 + 33_554_432


def test_details_page_with_scaled_units():
    softmax, reduce = parse_ncu_csv(DETAILS)
    assert softmax.name == "softmax_kernel(float const*, float*, int, int)"
    assert softmax.read_bytes == pytest.approx(134.22e6)
    assert softmax.write_bytes == pytest.approx(67_108.86e3)
    assert softmax.duration_s == pytest.approx(52.8e-6)
    assert reduce.read_bytes == pytest.approx(0.5e9)
    assert reduce.write_bytes == 256
    assert reduce.duration_s == pytest.approx(1.5e-3)


def test_raw_page_without_a_units_row_is_in_base_units():
    text = (
        '"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"\n"0","k","4096","2048"\n'
    )
    assert parse_ncu_csv(text) == [KernelBytes("k", 4096.0, 2048.0, None)]


def test_one_block_per_process_and_noise_between():
    second = RAW.replace("41213", "41300").replace('"add_kernel"', '"other_kernel"')
    text = RAW + "some output of the program\n==WARNING== something\n" + second
    names = [k.name for k in parse_ncu_csv(text)]
    assert len(names) == 6 and names[2] == "add_kernel" and names[5] == "other_kernel"


def test_not_available_values_are_unknown():
    text = (
        '"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"\n'
        '"","","byte","byte"\n'
        '"0","k","n/a","2048"\n'
    )
    (kernel,) = parse_ncu_csv(text)
    assert kernel.read_bytes is None and kernel.total_bytes is None


def test_no_csv_at_all():
    assert parse_ncu_csv("==PROF== Connected\n==WARNING== No kernels were profiled.\n") == []


def test_a_header_without_kernel_names_is_refused():
    with pytest.raises(ValueError, match="Kernel Name"):
        parse_ncu_csv('"ID","Metric Name","Metric Unit","Metric Value"\n"0","m","byte","1"\n')


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,234,567", 1_234_567.0),
        ("1,234.5", 1234.5),
        ("12.5", 12.5),
        ("1.234.567", 1_234_567.0),  # a locale with a decimal comma
        ("1.234,5", 1234.5),
        ("9,5", 9.5),
        ("1 234 567", 1_234_567.0),
        ("n/a", None),
        ("", None),
        ("nan", None),
    ],
)
def test_numbers_as_ncu_prints_them(text, value):
    assert hb._number(text) == value


def kernels_moving(read_gib: float, write_gib: float, n: int = 2) -> list[KernelBytes]:
    return [KernelBytes(f"kernel_{i}", read_gib * GIB / n, write_gib * GIB / n) for i in range(n)]


def test_more_than_the_ideal_with_several_kernels():
    entry = summarize(kernels_moving(4.1, 2.2), 3.0 * GIB)
    assert entry["message"] == (
        "Your kernels moved 2.1× the ideal 3.0 GiB (DRAM reads 4.1 GiB, writes 2.2 GiB): "
        "some data is written and read back, e.g. an intermediate."
    )
    assert entry["measured"] is True and entry["kernels"] == 2
    assert entry["ratio_to_minimum"] == pytest.approx(2.1)
    assert entry["total_bytes"] == pytest.approx(6.3 * GIB)
    assert entry["read_bytes"] == pytest.approx(4.1 * GIB)


def test_more_than_the_ideal_in_one_kernel_points_at_its_accesses():
    entry = summarize(kernels_moving(4.0, 2.0, n=1), 3.0 * GIB)
    assert entry["message"].startswith("Your kernels moved 2.0× the ideal 3.0 GiB")
    assert "uncoalesced" in entry["message"]


def test_close_to_the_minimum():
    entry = summarize(kernels_moving(2.0, 1.1), 3.0 * GIB)
    assert entry["message"] == (
        "Your kernels moved 1.0× the ideal 3.0 GiB (DRAM reads 2.0 GiB, writes 1.1 GiB): "
        "close to the minimum."
    )


def test_less_than_the_minimum_says_the_cache_kept_some():
    entry = summarize(kernels_moving(0.25, 0.25), 1.0 * GIB)
    assert entry["ratio_to_minimum"] == pytest.approx(0.5)
    assert "less than the minimum" in entry["message"] and "L2" in entry["message"]


def test_the_minimum_counts_every_profiled_call():
    entry = summarize(kernels_moving(2.0, 1.0), 1.0 * GIB, calls=3)
    assert entry["minimum_bytes"] == 3.0 * GIB
    assert entry["ratio_to_minimum"] == pytest.approx(1.0)


def test_the_harnesss_kernels_are_left_out_by_name():
    kernels = [
        *kernels_moving(2.0, 1.0),
        KernelBytes("void at::native::vectorized_elementwise_kernel<FillFunctor>", 0, 9 * GIB),
        KernelBytes("flush_l2_kernel", 9 * GIB, 9 * GIB),
    ]
    entry = summarize(kernels, 3.0 * GIB, ignore=["FillFunctor", "flush_l2", ""])
    assert entry["kernels"] == 2
    assert entry["ratio_to_minimum"] == pytest.approx(1.0)


def test_without_a_minimum_only_the_bytes():
    entry = summarize(kernels_moving(1.0, 1.0), None)
    assert entry["ratio_to_minimum"] is None
    assert entry["message"] == "Your kernels moved 2.0 GiB (DRAM reads 1.0 GiB, writes 1.0 GiB)."


def test_not_measured_where_ncu_does_not_work():
    entry = summarize(None, 3.0 * GIB, unavailable="ncu is not installed on this machine")
    assert entry == not_measured("ncu is not installed on this machine")
    assert entry["measured"] is False and entry["total_bytes"] is None
    assert entry["message"] == (
        "DRAM bytes were not measured on this machine: ncu is not installed on this machine."
    )


def test_not_measured_when_nothing_or_unreadable():
    assert summarize([], GIB)["measured"] is False
    assert (
        "no kernel of yours"
        in summarize([KernelBytes("fill", 1, 1)], GIB, ignore=["fill"])["message"]
    )
    unread = summarize([KernelBytes("k", None, 1.0), KernelBytes("j", 1, 1)], GIB)
    assert unread["measured"] is False
    assert "1 of your 2 kernel launches" in unread["message"]


def test_every_entry_fits_the_reports_schema():
    node = schema.schema()["properties"]["hardware_bytes"]
    for entry in (
        summarize(kernels_moving(4.1, 2.2), 3.0 * GIB),
        summarize(kernels_moving(1.0, 1.0), None),
        not_measured("no ncu"),
    ):
        assert schema.validate(dict(entry), node) == []
    assert "hardware_bytes" not in schema.schema()["required"]  # old reports validate


def test_the_terminal_report_shows_the_sentence(monkeypatch):
    from courseware.client.report_text import report_text

    monkeypatch.setenv("COLUMNS", "100")

    entry = summarize(kernels_moving(4.1, 2.2), 3.0 * GIB)
    text = report_text({"id": 7, "exercise": "x", "report": {"hardware_bytes": entry}})
    assert "DRAM bytes  Your kernels moved 2.1× the ideal 3.0 GiB" in text


# -- the probe -----------------------------------------------------------------------------

PERM = (
    "==PROF== Connected to process 901 (/usr/bin/python3.12)\n"
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
    "Performance Counters on the target device 0. For instructions on enabling permissions "
    "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
    "==PROF== Disconnected from process 901\n"
    "==WARNING== No kernels were profiled.\n"
)


def test_probe_outputs():
    assert probe_failure(RAW, 0) is None
    perm = probe_failure(PERM, 1)
    assert perm is not None and "restricted to administrators" in perm
    unsupported = probe_failure("==ERROR== Profiling is not supported on this device\n", 1)
    assert unsupported == (
        "ncu says profiling is not supported here: Profiling is not supported on this device"
    )
    nothing = probe_failure("==PROF== Disconnected\n==WARNING== No kernels were profiled.\n", 0)
    assert nothing is not None and "no kernel" in nothing
    failed = probe_failure("==ERROR== The application returned an error code (1).\n", 1)
    assert failed == "ncu failed: The application returned an error code (1)."


FAKE_NCU = """\
#!{python}
import socket
import os
import sys
args = sys.argv[1:]
mode = {mode!r}
if socket.gethostname() != "sandbox":  # a grading runs ncu in its sandbox: ask it there
    print("==ERROR== asked outside the sandbox", file=sys.stderr)
    raise SystemExit(3)
if args == ["--version"]:
    if mode == "broken":
        print("ncu: cannot load libnvperf_host.so", file=sys.stderr)
        raise SystemExit(1)
    print("NVIDIA (R) Nsight Compute Command Line Profiler")
    print("Version 2025.3.1.0 (build 36398880) (public-release)")
    raise SystemExit(0)
if args[:2] != ["--target-processes", "all"] or "torch" not in args[-1]:
    print("==ERROR== unexpected arguments " + repr(args))
    raise SystemExit(2)
with open(args[args.index("--log-file") + 1], "w") as log:
    log.write({perm!r} if mode == "perm" else {raw!r})
raise SystemExit(1 if mode == "perm" else 0)
"""


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """An ``ncu`` in a folder the sandbox would not see (its /tmp is a tmpfs of its own, as
    its /opt is empty): found only if its folder is bound in, and run as the sandbox's user."""
    folder = tmp_path / "nsight-compute"
    folder.mkdir(mode=0o755)
    tmp_path.chmod(0o755)

    def make(mode: str) -> Path:
        script = folder / "ncu"
        # The interpreter itself, not the venv's link to it: a venv below /tmp is mounted
        # elsewhere in the sandbox (graders/sandbox/launch.py), where its path would not exist.
        python = os.path.realpath(sys.executable)
        script.write_text(FAKE_NCU.format(python=python, mode=mode, perm=PERM, raw=RAW))
        script.chmod(0o755)
        monkeypatch.setenv("GRADERS_NCU", str(script))
        monkeypatch.setattr(hb, "_cached", {})
        return script

    return make


def test_probe_asks_ncu_inside_the_sandbox_and_keeps_the_answer(fake_ncu):
    fake_ncu("works")
    assert ncu_unavailable_reason() is None
    fake_ncu("broken")  # the machine changed: the process keeps what it learnt
    hb._cached["reason"] = None
    assert ncu_unavailable_reason() is None
    assert ncu_unavailable_reason(refresh=True) == (
        "`ncu --version` failed inside the sandbox "
        f"({hb.ncu_path()}): ncu: cannot load libnvperf_host.so"
    )


def test_probe_where_counters_need_an_administrator(fake_ncu):
    fake_ncu("perm")
    reason = ncu_unavailable_reason()
    assert reason is not None and "ERR_NVGPUCTRPERM" in reason


def test_probe_without_ncu(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADERS_NCU", str(tmp_path / "missing"))
    monkeypatch.setattr(hb, "_cached", {})
    assert ncu_unavailable_reason() == "Nsight Compute (ncu) is not installed on this machine"
    summary = summarize(None, GIB, unavailable=ncu_unavailable_reason())
    assert summary["message"] == (
        "DRAM bytes were not measured on this machine: "
        "Nsight Compute (ncu) is not installed on this machine."
    )


def test_the_report_page_row():
    from courseware.submissions.report_page import hardware_bytes_row

    row = hardware_bytes_row(dict(summarize(kernels_moving(4.1, 2.2), 3.0 * GIB)))
    assert row.value == "2.1× the minimum"
    assert row.detail.startswith("Your kernels moved 2.1×")
    missing = hardware_bytes_row(dict(not_measured("no ncu")))
    assert missing.value == "not measured"
    assert missing.detail == "DRAM bytes were not measured on this machine: no ncu."
