"""The numeric answer parser: what a student may type, and what gets a message instead."""

from __future__ import annotations

import pytest

from courseware.quizzes.marking import Tolerance
from courseware.quizzes.parsing import AnswerInvalid, parse_number


@pytest.mark.parametrize(
    ("typed", "unit", "value"),
    [
        ("1.25", None, 1.25),
        ("  -3 ", None, -3.0),
        (".5", None, 0.5),
        ("1.3e-5", None, 1.3e-5),
        ("1.3E-5", None, 1.3e-5),
        ("1.3 x 10^-5", None, 1.3e-5),
        ("1,024", None, 1024.0),
        ("1,234,567.5", None, 1234567.5),
        ("１２５", None, 125.0),  # full-width digits from a Chinese input method
        ("33", "us", 33.0),
        ("33 us", "us", 33.0),
        ("33us", "us", 33.0),
        ("33 µs", "us", 33.0),  # micro sign
        ("33 μs", "us", 33.0),  # Greek mu
        ("0.033 ms", "us", 33.0),
        ("33 微秒", "us", 33.0),
        ("2.039 TB/s", "TB/s", 2.039),
        ("2039 GB/s", "TB/s", 2.039),
        ("312 TFLOPS", "TFLOP/s", 312.0),
        ("312 TFLOP/s", "TFLOP/s", 312.0),
        ("3.12e14 FLOP/s", "TFLOP/s", 312.0),
        ("153 FLOP/B", "FLOP/B", 153.0),
        ("153 flops/byte", "FLOP/B", 153.0),
        ("8.4e7 FLOP", "FLOP", 8.4e7),
        ("84 MFLOP", "FLOP", 8.4e7),
        ("84 MFLOPs", "FLOP", 8.4e7),
        ("67 MB", "MB", 67.0),
        ("0.067 GB", "MB", 67.0),
        ("67000000 bytes", "MB", 67.0),
        ("40%", "%", 40.0),
        ("16x", "x", 16.0),
        # Units as the zh texts print them, and the ones Q1, Q8 and Q11 now declare.
        ("16 倍", "x", 16.0),
        ("16倍", "x", 16.0),
        ("13.3x", "x", 13.3),
        ("13 次", "x", 13.0),
        ("1.25 FLOP/字节", "FLOP/B", 1.25),
        ("153 FLOPs/字节", "FLOP/B", 153.0),
        ("2660 年", "years", 2660.0),
        ("2660 years", "years", 2660.0),
        ("2.66e+03 yr", "years", 2660.0),
        ("365.25 days", "years", 1.0),
        ("8766 小时", "years", 1.0),
        ("3.15576e7 s", "years", 1.0),
        ("70 cycles", "cycles", 70.0),
        ("70 个周期", "cycles", 70.0),
        ("1 cycle", "cycles", 1.0),
    ],
)
def test_it_reads_numbers_units_and_si_prefixes(typed: str, unit: str | None, value: float) -> None:
    assert parse_number(typed, unit=unit).value == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(
    ("typed", "unit", "says"),
    [
        ("", None, "empty"),
        ("   ", "us", "empty"),
        ("1,5", None, "decimal point"),
        ("1,0245", None, "decimal point"),
        ("12,34.5", None, "decimal point"),
        ("abc", None, "not a number"),
        ("1.2.3", None, "not a number"),
        ("33 us", None, "without a unit"),
        ("33 parsecs", "us", "not a unit we know"),
        ("33 GB", "us", "a time"),
        ("2 TB", "TB/s", "a bandwidth"),
        ("70 us", "cycles", "clock cycles"),
        ("70 cycles", "us", "a time"),
        ("16 倍", "FLOP/B", "arithmetic intensity"),
        ("2660 年", None, "without a unit"),
        ("1e999", None, "out of range"),
        ("9" * 200, None, "longer than"),
        ("nan", None, "not a number"),
        ("inf", None, "not a number"),
    ],
)
def test_it_refuses_malformed_answers_with_a_message(
    typed: str, unit: str | None, says: str
) -> None:
    with pytest.raises(AnswerInvalid) as caught:
        parse_number(typed, unit=unit)
    assert says in caught.value.message


def test_a_comma_message_asks_for_a_decimal_point() -> None:
    with pytest.raises(AnswerInvalid, match=r"write 1\.5, not 1,5"):
        parse_number("1,5", unit=None)


def test_relative_and_absolute_tolerances() -> None:
    tol = Tolerance(rel_tol=0.02)
    assert tol.accepts(153 * 1.019, 153) and not tol.accepts(153 * 1.021, 153)
    assert Tolerance(abs_tol=0.5).accepts(64.4, 64) and not Tolerance(abs_tol=0.5).accepts(65, 64)


def test_significant_figures_accept_the_rounded_answer_only() -> None:
    tol = Tolerance(sig_figs=2)
    assert tol.accepts(33, 32.91) and tol.accepts(32.6, 32.91)
    assert not tol.accepts(34, 32.91) and not tol.accepts(32.4, 32.91)
    assert Tolerance(sig_figs=3).accepts(0.000123, 0.0001234)
