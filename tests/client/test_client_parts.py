"""The client's small parts that need no server: the language header, the server address, the
table layout with Chinese titles, and the installed command's registration."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import tomllib

from courseware.client import cli, units
from courseware.client.http_api import accept_language
from courseware.client.report_text import report_text
from courseware.client.settings import normalize_server
from tests.client.conftest import ROOT


def test_the_terminals_language_becomes_accept_language() -> None:
    assert accept_language({"LANG": "zh_CN.UTF-8"}) == "zh-CN"
    assert accept_language({"LC_ALL": "en_GB.UTF-8", "LANG": "zh_CN.UTF-8"}) == "en-GB"
    assert accept_language({"LC_MESSAGES": "de_DE@euro", "LANG": "C"}) == "de-DE"
    assert accept_language({"LANG": "C.UTF-8"}) is None
    assert accept_language({}) is None


def test_a_server_address_is_taken_as_people_type_it() -> None:
    assert normalize_server("localhost:8000/") == "http://localhost:8000"
    assert normalize_server(" https://course.example.edu/ ") == "https://course.example.edu"


def test_tables_line_up_by_what_the_terminal_shows() -> None:
    table = units.table(
        ["Slug", "Title", "N"], [["a", "向量加法", "1"], ["bb", "Add", "10"]], right={2}
    )
    lines = table.splitlines()
    assert [units.width(line) for line in lines] == [units.width(lines[0])] * 3
    assert lines[1].endswith(" 1") and lines[2].endswith("10")


def test_figures_read_like_the_report_page() -> None:
    assert units.duration(0.0851) == "85.1 ms" and units.duration(1.28e-4) == "128 µs"
    assert units.bandwidth(2.3664) == "2.37 GB/s" and units.percent(0.0918) == "9.2 %"
    assert units.points(9.879) == "9.879" and units.points(6.0) == "6"
    assert units.percent("nan") == units.NONE


def test_the_gpucourse_command_is_registered_to_the_clients_main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pkgutil.resolve_name(project["project"]["scripts"]["gpucourse"]) is cli.main


def test_the_client_needs_nothing_but_the_standard_library() -> None:
    """So `pip install --no-deps .` is enough on a student's laptop: with no site-packages at
    all (-S), the client imports and runs, and loads no module outside the standard library."""
    check = (
        "import sys, courseware.client.cli, courseware.client.commands\n"
        "print(sorted({n.split('.')[0] for n in sys.modules}"
        " - set(sys.stdlib_module_names) - {'courseware', '__main__'}))"
    )
    loaded = subprocess.run(
        [sys.executable, "-S", "-c", check], cwd=ROOT, capture_output=True, text=True
    )
    assert loaded.returncode == 0 and loaded.stdout.strip() == "[]", loaded
    helped = subprocess.run(
        [sys.executable, "-S", "-m", "courseware.client", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert helped.returncode == 0 and "submit" in helped.stdout, helped


def test_a_notebook_report_lists_its_cells_and_who_grades_them() -> None:
    data = {
        "id": 7,
        "exercise": "fusion-notebook",
        "status": "needs_review",
        "verdict": "correct",
        "score": 3.0,
        "max_score": 5.0,
        "report": {
            "message": "2 of 3 cells graded.",
            "cells": [
                {"grade_id": "fuse", "score": 2, "max_score": 2, "passed": True},
                {"grade_id": "explain", "score": 0, "max_score": 2, "needs_manual_grade": True},
                {"grade_id": "check", "score": 1, "max_score": 1, "passed": False},
            ],
        },
        "feedback": None,
        "url": "http://site/submissions/7/",
    }
    text = report_text(data)
    assert "a TA will look at it before the score is final" in text
    assert "Score       3 / 5" in text and "Message     2 of 3 cells graded." in text
    rows = {line.split()[0]: line for line in text.splitlines()[-6:] if line.startswith("  ")}
    assert rows["fuse"].endswith("passed") and rows["check"].endswith("failed")
    assert rows["explain"].endswith("waiting for a person")
