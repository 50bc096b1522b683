"""The submission page teaches: verdict, score parts, figures, chart, feedback, history, diff."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import translation

from courseware.submissions.models import Submission
from courseware.submissions.report_page import report_page, score_breakdown
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders.report.schema import upgrade
from tests.conftest import Cast

SAMPLE_REPORTS = Path(__file__).resolve().parent / "sample_reports"
CODE = "def vector_add(a, b):\n    return a + b\n"


def sample(name: str) -> dict[str, Any]:
    return json.loads((SAMPLE_REPORTS / "vector-add" / f"{name}.json").read_text())


def graded(cast: Cast, report: dict[str, Any], *, code: str = CODE, key: str = "k") -> Submission:
    made = submission_create(user=cast.alice, exercise_slug="vector-add", code=code)
    submission_claim(submission_id=made.pk)
    grading_record(
        submission_id=made.pk, report=upgrade(report), run_key=key, worker="w", duration_s=1
    )
    return Submission.objects.get(pk=made.pk)


def page_of(user, submission: Submission, language: str = "en") -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/submissions/{submission.pk}/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.content.decode()


def test_a_fast_submission_shows_readable_figures_chart_feedback_and_roofline_link(
    cast: Cast,
) -> None:
    report = sample("fast")
    html = page_of(cast.alice, graded(cast, report))
    perf = report["performance"]
    assert '<svg id="roofline-chart"' in html and '<section id="feedback"' in html
    assert '<table id="score-breakdown">' in html and '<table id="history">' in html
    assert re.search(r"\d+(\.\d+)? (ms|µs) ", html)  # the median in a unit a person reads
    assert f"{round(perf['fraction_of_peak'] * 100)} %" in html
    assert "aten::add" in html and report["device"]["name"] in html
    link = re.search(r'id="roofline-link" href="([^"]+)"', html)
    assert link is not None and link.group(1).startswith("/roofline/?device=")
    assert "ai=0.0833333" in link.group(1)


def test_the_page_speaks_chinese(cast: Cast) -> None:
    html = page_of(cast.alice, graded(cast, sample("fast")), "zh-hans")
    assert "正确" in html and "受内存带宽限制" in html and "分数的构成" in html
    assert "下一步" in html and "算术强度" in html


def test_the_breakdown_adds_up_with_a_late_penalty_and_an_override(cast: Cast) -> None:
    cast.offering.default_late_penalty_per_day = Decimal("0.1")
    cast.offering.save()
    submission = graded(cast, sample("slow"))
    Submission.objects.filter(pk=submission.pk).update(is_late=True, late_days=2)
    submission = Submission.objects.get(pk=submission.pk)
    with translation.override("en"):
        before = score_breakdown(submission, submission.current_grading)
    assert before is not None
    assert sum(row.points for row in before.rows) == before.total
    assert [row.label for row in before.rows][-1] == "Late penalty"

    ta = Client()
    ta.force_login(cast.tara)
    ta.post(f"/submissions/{submission.pk}/override", {"score": "9.5", "comment": "Nice fusion."})
    after = score_breakdown(submission, submission.current_grading)
    assert after is not None and after.total == Decimal("9.5")
    assert sum(row.points for row in after.rows) == after.total
    html = page_of(cast.alice, submission)
    assert "Nice fusion." in html and "tara set the score to 9.5" in html


def test_a_wrong_submission_explains_the_mismatch(cast: Cast) -> None:
    report = sample("wrong")
    html = page_of(cast.alice, graded(cast, report))
    index = ", ".join(str(i) for i in report["correctness"]["first_mismatch"]["index"])
    assert f"({index})" in html and 'data-kind="wrong"' in html
    assert '<table id="correctness">' in html


def test_the_naive_version_unchanged_is_recognised(cast: Cast) -> None:
    naive = (Path(__file__).resolve().parents[3] / "exercises/ch15/vector-add/naive.py").read_text()
    html = page_of(cast.alice, graded(cast, sample("naive"), code=naive))
    assert 'data-kind="naive_itself"' in html


def test_a_report_stored_in_an_old_shape_still_renders(cast: Cast) -> None:
    old = {"verdict": "correct", "score": 6, "max_score": 10, "gradable": True}
    old_perf = {
        **old,
        "performance": {"median_s": 0.0204, "runs": 7, "cv": 0.01, "achieved_gbps": 16.8},
    }
    for key, report in (("a", old), ("b", old_perf)):
        html = page_of(cast.alice, graded(cast, report, key=key))
        assert "Correct" in html and '<table id="score-breakdown">' in html
    assert "20.4 ms" in html and "16.8 GB/s" in html


def test_tracebacks_show_the_students_code_never_our_wrappers(cast: Cast) -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/opt/grader/graders/harness/main.py", line 200, in run\n'
        "    result = fn(*args)\n"
        '  File "/scratch/in/submission.py", line 2, in vector_add\n'
        "    return a + b[:1]\n"
        "RuntimeError: size mismatch\n"
    )
    report = {"verdict": "error", "message": "Your code raised RuntimeError", "traceback": trace}
    html = page_of(cast.alice, graded(cast, report))
    shown = re.search(r'<pre id="traceback">(.*?)</pre>', html, re.S)
    assert shown is not None
    assert "submission.py" in shown.group(1) and "harness" not in shown.group(1)


def test_a_notebook_cells_output_loses_the_hidden_test_loader(cast: Cast) -> None:
    output = (
        "AssertionError  Traceback (most recent call last)\n"
        "Cell In[2], line 1\n"
        "----> 1 exec(__import__('marshal').loads(__import__('base64').b64decode('...')), "
        "globals())\n\n"
        "File <test test-add>:1\n----> 1 assert add(1, 2) == 3\n\n"
        "AssertionError: add(1, 2) should be 3"
    )
    report = {
        "verdict": "wrong",
        "kind": "notebook",
        "cells": [{"grade_id": "test-add", "score": 0, "max_score": 2, "output": output}],
    }
    html = page_of(cast.alice, graded(cast, report))
    assert "<test test-add>" not in html and "&lt;test test-add&gt;" in html
    assert "marshal" not in html.split("Full report")[0]


def test_history_and_diff_show_the_authors_submissions_to_who_may_see_them(cast: Cast) -> None:
    first = graded(cast, sample("slow"), code="def vector_add(a, b):\n    return a - b\n", key="1")
    second = graded(
        cast, sample("fast"), code="def vector_add(a, b):\n    return a + b  # <ok>\n", key="2"
    )
    html = page_of(cast.alice, second)
    assert f"/submissions/{second.pk}/diff/?against={first.pk}" in html
    client = Client()
    client.force_login(cast.alice)
    diff = client.get(f"/submissions/{second.pk}/diff/?against={first.pk}").content.decode()
    assert '<tr class="removed"><td>-    return a - b</td></tr>' in diff
    assert "# &lt;ok&gt;" in diff and "<ok>" not in diff
    bob = Client()
    bob.force_login(cast.bob)
    assert bob.get(f"/submissions/{second.pk}/diff/?against={first.pk}").status_code == 404
    page = report_page(submission=second, viewer=cast.tara, is_staff=True)
    assert [row.submission.pk for row in page.history] == [second.pk, first.pk]


@pytest.mark.parametrize("language, queued", [("en", "Queued"), ("zh-hans", "排队中")])
def test_a_pending_page_polls_with_translated_status_words(
    cast: Cast, language: str, queued: str
) -> None:
    made = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    html = page_of(cast.alice, made, language)
    # A live region: a screen reader hears the status change as the page polls.
    assert (
        f'<span class="status" id="status" role="status" aria-live="polite">{queued}</span>' in html
    )
    assert "api/v1/submissions" in html and 'id="status-labels"' in html


def test_a_gpu_report_says_how_its_windows_were_made_in_both_languages(cast: Cast) -> None:
    report = sample("fast")
    report["performance"].update(calls_per_window=6, empty_window_s=0.00021)
    report["device"]["sandbox"]["device"] = {
        "gpu_completion": "the window closes after the driver confirmed the work had finished",
        "gpu_memory": "watched from outside through NVML after every call",
    }
    submission = graded(cast, report)
    html = page_of(cast.alice, submission)
    assert "Calls in each timed window" in html and ">6<" in html
    assert "Empty window taken off each window" in html and "210" in html
    assert "the driver confirmed the work had finished" in html
    chinese = page_of(cast.alice, submission, "zh-hans")
    assert "每个计时窗口内的调用次数" in chinese and "GPU 工作何时结束" in chinese
