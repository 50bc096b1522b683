"""Honest rounding and the units students type (issue 27, part 1).

The checker is called directly (no HTTP, no database), so drawing every numeric question 200
times stays well under a second or two per question."""

from __future__ import annotations

import hashlib
from decimal import ROUND_HALF_UP, Decimal, localcontext
from pathlib import Path
from typing import Any

import pytest
from django.utils import translation

from courseware.quizzes.marking import Tolerance, round_significant
from courseware.quizzes.parsing import parse_number
from courseware.quizzes.spec import Question, QuizFileError, load_quiz, validate_question
from courseware.quizzes.units import ANSWER_UNITS, answer_unit, unit_label
from tests.conftest import Cast
from tests.courseware.quizzes.conftest import SLUG, bank, logged_in, question, variant
from tests.courseware.quizzes.page_html import question_block
from tests.courseware.quizzes.test_quiz_files import copy_bank, edit

DRAWS = 200
NUMERIC = [q.key for q in bank().questions if q.kind == "numeric"]


def two_figures(value: float) -> str:
    """`value` as a student writes it rounded to 2 significant figures, halves up, in plain
    decimal notation (2039 -> "2000", 1.25 -> "1.3", 0.0125 -> "0.013")."""
    with localcontext() as context:
        context.rounding = ROUND_HALF_UP
        rounded = Decimal(format(Decimal(f"{value:.10g}"), ".2g"))
    return format(rounded, "f")


def draws(asked: Question, count: int = DRAWS) -> list[dict[str, Any]]:
    if not asked.is_parameterized:
        return [{}]
    digests = (hashlib.sha256(f"rounding:{asked.key}:{i}".encode()).digest() for i in range(count))
    return [asked.draw(int.from_bytes(digest[:8])) for digest in digests]


def marked_right(asked: Question, variables: dict[str, Any], typed: str) -> bool:
    """As the service marks an answer: read it in the question's unit, then the checker."""
    solution = asked.solve(variables)
    assert asked.tolerance is not None and isinstance(solution.answer, float)
    return asked.tolerance.accepts(parse_number(typed, unit=asked.unit).value, solution.answer)


def test_the_bank_has_numeric_questions_to_draw() -> None:
    assert len(NUMERIC) >= 20


@pytest.mark.parametrize("key", NUMERIC)
def test_the_two_figure_answer_is_accepted_on_every_draw(key: str) -> None:
    asked = question(key)
    assert asked.tolerance is not None and asked.tolerance.digits == 2, "asks for more digits"
    for variables in draws(asked):
        exact = asked.solve(variables).answer
        assert isinstance(exact, float)
        typed = two_figures(exact)
        shown = [typed]
        if asked.unit:
            shown += [f"{typed} {asked.unit}", f"{typed} {answer_unit(asked.unit, 'zh')}"]
        for text in shown:
            assert marked_right(asked, variables, text), (key, variables, exact, text)


@pytest.mark.parametrize(
    ("exact", "digits", "rounded"),
    [(1.25, 2, 1.3), (0.0125, 2, 0.013), (2039.0, 2, 2000.0), (2.5, 1, 3.0), (-1.25, 2, -1.3),
     (1.2499999999999998, 2, 1.3), (32.91, 2, 33.0), (153.02, 3, 153.0), (0.0, 2, 0.0)],
)  # fmt: skip
def test_rounding_is_half_up_as_taught(exact: float, digits: int, rounded: float) -> None:
    assert round_significant(exact, digits) == pytest.approx(rounded)


def test_the_issue_examples_are_accepted_and_a_misrounding_is_not() -> None:
    q17 = question("17-layernorm-ai")
    v = {"b": 8, "s": 512, "d": 4096, "dtype": {"name": "bf16", "bytes": 2}}
    assert q17.solve(v).answer == pytest.approx(1.25)
    assert marked_right(q17, v, "1.3")  # 4 % off, outside its 3 % tolerance, yet honest
    assert marked_right(q17, v, "1.25 FLOP/B")
    assert not marked_right(q17, v, "1.2")  # rounds the wrong way and is 4 % off
    assert not marked_right(q17, v, "1.4")


def test_the_rule_widens_nothing_but_the_rounded_value() -> None:
    tight = Tolerance(rel_tol=0.01)
    assert tight.accepts(1.3, 1.25) and tight.accepts(1.26, 1.25)
    assert not tight.accepts(1.28, 1.25) and not tight.accepts(1.31, 1.25)
    three = Tolerance(rel_tol=0.001, digits=3)
    assert three.accepts(153.0, 152.99) and not three.accepts(150.0, 152.99)


@pytest.mark.parametrize(
    ("typed", "unit", "value"),
    [
        ("2039 GB/s", "GB/s", 2039.0),
        ("2039 GBps", "GB/s", 2039.0),
        ("2.039 TB/s", "GB/s", 2039.0),
        ("2.039 TBps", "GB/s", 2039.0),
        ("1 GiB/s", "GB/s", 1.073741824),
        ("312 TFLOPS", "TFLOP/s", 312.0),
        ("312 TFLOP/s", "TFLOP/s", 312.0),
        ("1.25 FLOP/B", "FLOP/B", 1.25),
        ("1.25 FLOPs/byte", "FLOP/B", 1.25),
        ("1.25 flop/byte", "FLOP/B", 1.25),
        ("1.25 FLOP/字节", "FLOP/B", 1.25),
        ("33 μs", "us", 33.0),  # Greek mu
        ("33 µs", "us", 33.0),  # micro sign
        ("33 us", "us", 33.0),
        ("33 微秒", "us", 33.0),
        ("0.033 ms", "us", 33.0),
        ("0.033 毫秒", "us", 33.0),
        ("33000 ns", "us", 33.0),
        ("33000 纳秒", "us", 33.0),
        ("16 倍", "x", 16.0),
        ("16x", "x", 16.0),
        ("16 x", "x", 16.0),
        ("512 字节", "B", 512.0),
    ],
)
def test_the_unit_spellings_students_type(typed: str, unit: str, value: float) -> None:
    assert parse_number(typed, unit=unit).value == pytest.approx(value)


def test_a_wrong_unit_is_never_read_as_the_asked_one() -> None:
    """33 µs typed as "33 ms" is read as 33 ms (33000 µs) and marked wrong, not taken for µs."""
    q18 = question("18-layernorm-memory-time")
    for variables in draws(q18, 50):
        exact = q18.solve(variables).answer
        assert isinstance(exact, float)
        typed = two_figures(exact)
        assert marked_right(q18, variables, f"{typed} µs")
        for wrong_unit in ("ms", "毫秒", "ns", "纳秒", "s"):
            assert not marked_right(q18, variables, f"{typed} {wrong_unit}"), (typed, wrong_unit)


def test_zh_pages_name_the_unit_in_chinese() -> None:
    q18 = question("18-layernorm-memory-time")
    v = draws(q18, 1)[0]
    solution = q18.solve(v)
    assert q18.answer_text(solution, v, "zh").endswith(" 微秒")
    assert q18.answer_text(solution, v, "en").endswith(" µs")
    with translation.override("zh-hans"):
        assert unit_label("us") == "微秒" and unit_label("ms") == "毫秒"
        assert unit_label("B") == "字节"
    with translation.override("en"):
        assert unit_label("B") == "B"
    # Whatever a zh page shows after a number, a student may copy back.
    for unit in ("s", "ms", "us", "ns", "days", "years", "B", "cycles", "x", "FLOP/B"):
        assert parse_number(f"3 {answer_unit(unit, 'zh')}", unit=unit).value == pytest.approx(3)


def test_a_question_that_wants_more_digits_must_say_so(tmp_path: Path) -> None:
    folder = copy_bank(tmp_path)
    file = folder / "questions" / "13-ridge-point.toml"
    edit(file, "[answer]\n", "[answer]\ndigits = 3\n")
    with pytest.raises(QuizFileError, match=r"text\.en must say '3 significant figures'"):
        load_quiz(folder, validate=False)
    text = file.read_text()
    text = text.replace('en = """', 'en = """Give 3 significant figures. ', 1)
    text = text.replace('zh = """', 'zh = """请保留 3 位有效数字。', 1)
    file.write_text(text)
    asked = load_quiz(folder, validate=False).question("13-ridge-point")
    assert asked is not None and asked.tolerance is not None and asked.tolerance.digits == 3
    edit(file, "digits = 3", "digits = 1")
    with pytest.raises(QuizFileError, match=r"must be between 2 and 6"):
        load_quiz(folder, validate=False)


def test_a_zh_page_reveals_the_answer_with_its_unit_in_chinese(cast: Cast) -> None:
    """Through the page: a student answers in µs, to 2 significant figures, and the zh page
    shows the answer in 微秒 (the en page in µs)."""
    key = "18-layernorm-memory-time"
    exact = question(key).solve(variant(cast.alice, key)).answer
    assert isinstance(exact, float)
    client = logged_in(cast.alice)
    page = f"/quizzes/{SLUG}/"
    with translation.override("zh-hans"):
        response = client.post(
            page, {"question": key, "answer": f"{two_figures(exact)} 微秒"},
            HTTP_ACCEPT_LANGUAGE="zh-hans",
        )  # fmt: skip
        zh = client.get(response["Location"], HTTP_ACCEPT_LANGUAGE="zh-hans").content
    block = question_block(zh, 18)
    shown = question(key).answer_text(question(key).solve(variant(cast.alice, key)), {}, "zh")
    assert shown.endswith(" 微秒") and shown in block.text
    assert "µs" not in block.text  # the zh explanation names the unit in Chinese too
    with translation.override("en"):
        en = client.get(response["Location"], HTTP_ACCEPT_LANGUAGE="en").content
    assert shown.replace(" 微秒", " µs") in question_block(en, 18).text


def test_validation_refuses_a_unit_the_page_shows_but_cannot_read_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """sync_content --check types the 2-figure answer with the unit each page shows; were a zh
    spelling one the parser does not know, the file is refused instead of students."""
    monkeypatch.setitem(ANSWER_UNITS["zh"], "us", "微秒钟")
    with pytest.raises(QuizFileError, match=r"answer\.unit.*微秒钟.*refused"):
        validate_question(question("18-layernorm-memory-time"), variants=1)
