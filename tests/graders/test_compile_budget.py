"""The import's and checks' budget: setup_s, plus only the time a compiler was seen running.

Issue 38, class 5: a dead ``torch.compile`` in the source used to buy compile_s (120 s) for
anything, a sleep included. Now the clock (graders/grading/compile_clock.py) looks at the
sandbox's tasks from outside and credits a look's interval only when a compiler's process, or
a thread the harness marked while torch.compile or Triton's JIT compile in-process, was busy.
The hostile corpus holds the attacks (tests/hostile/cases/compile_budget/); here are the
clock's parts, and a real compile that earns its time in the real sandbox.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from graders import grade, load_exercise
from graders.grading.compile_clock import CompileClock, compiler_name
from graders.harness.compile_marks import MARK

from .conftest import copy_exercise


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/usr/bin/x86_64-linux-gnu-g++-12", "g++"),
        ("/usr/libexec/gcc/x86_64-linux-gnu/12/cc1plus", "cc1plus"),
        ("/usr/bin/x86_64-linux-gnu-as", "as"),
        ("/usr/local/cuda/bin/nvcc", "nvcc"),
        ("/venv/lib/python3.11/site-packages/triton/backends/nvidia/bin/ptxas", "ptxas"),
        ("/venv/bin/ninja", "ninja"),
        ("/usr/bin/clang-16", "clang"),
        ("/usr/bin/python3.11", None),
        ("/usr/bin/sleep", None),
        ("/tmp/g++-ish", None),
    ],
)
def test_compilers_are_known_by_their_executables(path: str, name: str | None) -> None:
    assert compiler_name(path) == name


def _process(code: str) -> Iterator[int]:
    process = subprocess.Popen([sys.executable, "-c", code])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


def _renamed(name: str, then: str) -> str:
    return (
        "import threading, time\n"
        "path = f'/proc/self/task/{threading.get_native_id()}/comm'\n"
        f"open(path, 'w').write({name!r})\n"
        f"{then}\n"
    )


@pytest.fixture
def busy_marked() -> Iterator[int]:
    yield from _process(_renamed(MARK, "while True: pass"))


@pytest.fixture
def sleeping_marked() -> Iterator[int]:
    yield from _process(_renamed(MARK, "time.sleep(60)"))


@pytest.fixture
def busy_unmarked() -> Iterator[int]:
    yield from _process(_renamed("worker", "while True: pass"))


def _credit(pid: int) -> float:
    """What two looks 0.1 s apart credit for ``pid``, once its name is set."""
    comm = Path(f"/proc/{pid}/comm")
    for _ in range(200):  # the interpreter's start: at most a few seconds
        if comm.read_text().strip() in (MARK, "worker"):
            break
        subprocess.run(["sleep", "0.02"], check=True)
    clock = CompileClock(lambda: [pid], started=100.0, setup_s=5.0, compile_s=20.0)
    assert clock.look(100.0) == 105.0
    subprocess.run(["sleep", "0.2"], check=True)  # the sleeper is asleep by now
    clock.look(100.1)
    return clock.credited_s


def test_a_busy_marked_thread_is_credited(busy_marked: int) -> None:
    assert _credit(busy_marked) == pytest.approx(0.1)


def test_a_sleeping_marked_thread_is_not(sleeping_marked: int) -> None:
    assert _credit(sleeping_marked) == 0.0


def test_a_busy_thread_without_the_mark_is_not(busy_unmarked: int) -> None:
    assert _credit(busy_unmarked) == 0.0


def test_the_credit_is_capped_and_a_gap_between_calls_is_not_counted(busy_marked: int) -> None:
    _credit(busy_marked)  # waits for its name
    clock = CompileClock(lambda: [busy_marked], started=0.0, setup_s=5.0, compile_s=5.5)
    clock.look(0.0)
    clock.look(30.0)  # a gap (frozen between calls): at most two polls' worth of it
    assert clock.credited_s == pytest.approx(0.2)
    for step in range(1, 20):
        clock.look(30.0 + step * 0.1)
    assert clock.credited_s == pytest.approx(0.5)  # compile_s - setup_s at most
    assert clock.deadline() == pytest.approx(5.5)


# ------------------------------------------------------------------ in the real sandbox

COMPILES_AT_IMPORT = """
import subprocess
import time

import torch

SOURCE = "template <int N> struct F { enum { v = F<N - 1>::v + N }; };\\n" \\
    "template <> struct F<0> { enum { v = 0 }; };\\nint x = F<400>::v;\\n"
started = time.monotonic()
while time.monotonic() - started < 8.0:  # g++ compiling, again and again, for 8 s
    subprocess.run(["g++", "-O2", "-c", "-x", "c++", "-", "-o", "/dev/null"],
                   input=SOURCE, text=True, check=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
"""

TRACES_AT_IMPORT = """
import torch


def _long(x):
    for _ in range(1500):  # Dynamo traces each step: seconds of tracing, in-process
        x = x * 1.0 + 0.0
    return x


_compiled = torch.compile(_long, backend="eager")
_compiled(torch.ones(3))  # traced here, at import


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
"""

SLEEPS_AT_IMPORT = """
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x):
    pass


if False:
    torch.compile(lambda x: x)

time.sleep(30)  # no compiler runs: neither word buys time


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
"""


@pytest.fixture(scope="module")
def short_setup(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """vector-add with setup_s = 4 s (compile_s stays 120 s) and a small timed size."""
    return copy_exercise(
        tmp_path_factory.mktemp("short_setup"),
        {
            r"setup_s = 60": "setup_s = 4",
            r"timed = \{ n = 16777216 \}": "timed = { n = 65536 }",
            r"timed_s = 30": "timed_s = 10",
            r'\[scoring.curve.cpu\]\nmeasure = "relative_to_reference"': (
                '[scoring.curve.cpu]\nmeasure = "fraction_of_peak_bandwidth"'
            ),
        },
    )


def test_a_compiler_that_runs_earns_its_time(short_setup: Path) -> None:
    spec = load_exercise(short_setup)
    report = grade(spec, COMPILES_AT_IMPORT, device="cpu", compare=False, profile=False)
    # 8 s of g++ at import, twice setup_s: the compiler's own time is added to the budget.
    assert report["verdict"] == "correct", report["message"]


def test_compiling_in_process_earns_its_time(short_setup: Path) -> None:
    spec = load_exercise(short_setup)
    report = grade(spec, TRACES_AT_IMPORT, device="cpu", compare=False, profile=False)
    # Dynamo's import and tracing (about 10 s here, under load) run in the harness's process,
    # on a thread the harness marks (graders/harness/compile_marks.py): their busy time counts.
    assert report["verdict"] == "correct", report["message"]


def test_words_and_sleep_earn_nothing(short_setup: Path) -> None:
    spec = load_exercise(short_setup)
    report = grade(spec, SLEEPS_AT_IMPORT, device="cpu", compare=False, profile=False)
    assert report["verdict"] == "timeout", report["message"]
    message = report["message"] or ""
    assert "import and the correctness checks together have 4 s" in message
    assert "it ran 0.0 s), up to 120 s in all" in message
