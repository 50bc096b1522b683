"""The report page's line for a forbidden operator, in both languages."""

from __future__ import annotations

from django.utils import translation

from courseware.submissions.forbidden_note import forbidden_message

REPORT = {
    "verdict": "correct",
    "message": "engine's English",
    "forbidden": {"rules": ["softmax"], "operators": ["aten::_softmax", "aten::softmax"]},
}


def test_names_the_operator_and_the_rule_in_english() -> None:
    with translation.override("en"):
        line = forbidden_message(REPORT)
    assert line is not None
    assert "aten::_softmax, aten::softmax" in line
    assert "no performance points" in line
    assert "write softmax" in line


def test_says_it_in_chinese() -> None:
    with translation.override("zh-hans"):
        line = forbidden_message(REPORT)
    assert line is not None
    assert "aten::_softmax" in line and "softmax" in line
    assert "性能分" in line


def test_nothing_forbidden_says_nothing() -> None:
    assert forbidden_message({"verdict": "correct", "message": None}) is None
    assert forbidden_message(None) is None
    assert forbidden_message({"forbidden": {"rules": [], "operators": []}}) is None
