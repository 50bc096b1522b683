"""Where the student stands: the ladder on the submission page and the exercise page.

The view logic is tested with reports as the engine stores them (a ``ladder`` block built by
graders/report/ladder.py) and with a validation record written through the validator's own
store; nothing here times anything.
"""

from __future__ import annotations

import json
import re
import shutil
import typing
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import translation

from courseware.submissions.ladder_view import exercise_ladder, ladder_view, report_ladder
from courseware.submissions.models import Submission
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders import load_exercise
from graders.authoring import validate
from graders.authoring.ladder_rules import LadderRecord
from graders.report.schema import upgrade
from tests.conftest import Cast

CODE = "def vector_add(a, b):\n    return a + b\n"
EXERCISE = Path(__file__).resolve().parents[3] / "exercises" / "ch15" / "vector-add"


def block(submission: float, points: float, *, naive: float = 0.35) -> dict[str, Any]:
    return {
        "measure": "relative_to_reference",
        "full_at": 0.9,
        "zero_at": 0.45,
        "performance_points": 4.0,
        "rungs": [
            {"name": "naive", "value": naive, "points": 0.0},
            {"name": "reference", "value": 1.0, "points": 4.0},
            {"name": "submission", "value": submission, "points": points},
        ],
    }


def report_with(ladder: dict[str, Any] | None, score: float = 9.0) -> dict[str, Any]:
    report: dict[str, Any] = {
        "exercise": "vector-add",
        "verdict": "correct",
        "score": score,
        "max_score": 10,
        "gradable": True,
        "flags": [],
    }
    if ladder is not None:
        report["ladder"] = ladder
    return report


def graded(cast: Cast, report: dict[str, Any], key: str) -> Submission:
    made = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE + f"# {key}\n")
    submission_claim(submission_id=made.pk)
    grading_record(
        submission_id=made.pk, report=upgrade(report), run_key=key, worker="w", duration_s=1
    )
    return Submission.objects.get(pk=made.pk)


def html_of(user, path: str, language: str = "en") -> str:
    client = Client()
    client.force_login(user)
    response = client.get(path, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.content.decode()


def rows(html: str) -> dict[str, tuple[str, str]]:
    """The ladder table's rows: rung -> (figure, points)."""
    table = re.search(r'<table id="ladder-table">(.*?)</table>', html, re.S)
    assert table is not None, "no ladder table"
    found = re.findall(
        r'<tr data-rung="(\w+)"><th scope="row">[^<]*</th><td class="number">([^<]*)</td>'
        r'<td class="number">([^<]*)</td></tr>',
        table.group(1),
    )
    return {key: (value, points) for key, value, points in found}


def test_the_marks_sit_in_order_on_the_axis_inside_the_drawing() -> None:
    with translation.override("en"):
        view = ladder_view(block(0.8, 3.1), source="here")
    assert view is not None
    xs = {rung.key: rung.x for rung in view.rungs}
    assert view.axis_left <= xs["naive"] < view.zero_x < xs["submission"] < view.full_x
    assert view.full_x < xs["reference"] <= view.axis_right
    assert [r.points_text for r in view.rungs] == ["0", "4", "3.1"]
    assert view.none_width == pytest.approx(view.zero_x - view.axis_left)


def test_a_block_without_figures_gives_no_ladder() -> None:
    assert ladder_view(None, source="") is None
    assert ladder_view({"measure": "relative_to_reference", "rungs": []}, source="") is None
    assert report_ladder(report_with(None)) is None


def test_the_exercise_page_takes_the_latest_rungs_and_the_best_figure() -> None:
    older = report_with(block(0.95, 4.0, naive=0.30))
    newer = report_with(block(0.6, 1.3, naive=0.40))
    with translation.override("en"):
        view = exercise_ladder([(12, newer), (7, older)], validation=None)
    assert view is not None
    shown = {rung.key: (rung.value, rung.points) for rung in view.rungs}
    # Naive and reference from the newest report, the best figure from the older one.
    assert shown == {"naive": (0.40, 0.0), "reference": (1.0, 4.0), "best": (0.95, 4.0)}
    assert "#12" in view.source


def test_without_reports_the_exercise_page_reads_the_validation_record() -> None:
    record = block(0.0, 0.0)
    record["rungs"] = [*record["rungs"][:2], {"name": "samples/fast", "value": 1, "points": 4}]
    with translation.override("en"):
        view = exercise_ladder([(3, report_with(None))], validation=record)
    assert view is not None
    assert [rung.key for rung in view.rungs] == ["naive", "reference"]
    assert "validated" in view.source
    assert exercise_ladder([], validation=None) is None


def test_the_submission_page_shows_its_ladder_in_english_and_chinese(cast: Cast) -> None:
    submission = graded(cast, report_with(block(0.8, 3.1)), "a")
    html = html_of(cast.alice, f"/submissions/{submission.pk}/")
    assert '<section id="ladder"' in html and 'class="ladder-chart"' in html
    assert rows(html) == {
        "naive": ("0.35×", "0 / 4"),
        "reference": ("1×", "4 / 4"),
        "submission": ("0.8×", "3.1 / 4"),
    }
    assert "This submission" in html and "Where you stand" in html
    zh = html_of(cast.alice, f"/submissions/{submission.pk}/", "zh-hans")
    assert "你的位置" in zh and "朴素版本" in zh and "参考实现" in zh
    assert rows(zh)["submission"] == ("0.8×", "3.1 / 4")


def test_the_exercise_page_shows_the_rungs_from_the_validation_and_then_the_best(
    cast: Cast, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADERS_CACHE_DIR", str(tmp_path))
    assert '<section id="ladder"' not in html_of(cast.alice, "/exercises/vector-add/")
    spec = load_exercise(EXERCISE)
    record = validate.ExerciseResult(
        str(spec.path),
        spec.slug,
        spec.content_hash,
        "perf",
        "cpu",
        ladder=typing.cast("LadderRecord", block(0.0, 0.0)),
    )
    validate.store_result(record)
    html = html_of(cast.alice, "/exercises/vector-add/")
    assert set(rows(html)) == {"naive", "reference"}
    graded(cast, report_with(block(0.7, 2.2)), "b")
    zh = html_of(cast.alice, "/exercises/vector-add/", "zh-hans")
    assert rows(zh)["best"] == ("0.7×", "2.2 / 4")
    assert "你目前的最好成绩" in zh
    # Another student's page is their own: alice's figure is not on bob's ladder.
    assert "best" not in rows(html_of(cast.bob, "/exercises/vector-add/"))


def test_a_stored_report_keeps_its_ladder_through_the_api(cast: Cast) -> None:
    submission = graded(cast, report_with(block(0.8, 3.1)), "c")
    client = Client()
    client.force_login(cast.alice)
    body = json.loads(client.get(f"/api/v1/submissions/{submission.pk}").content)
    assert body["report"]["ladder"]["rungs"][-1]["value"] == 0.8


@pytest.mark.django_db
def test_sync_content_withholds_an_exercise_whose_measured_ladder_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from io import StringIO

    from django.core.management import call_command

    from courseware.courses.models import Item
    from graders.authoring.ladder_rules import ladder_problems, measured_ladder

    monkeypatch.setenv("GRADERS_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "content"
    shutil.copytree(EXERCISE, root / "ch15" / "vector-add")
    spec = load_exercise(root / "ch15" / "vector-add")
    # The naive version measured as fast as the reference: the ladder fails on its first rung.
    reports = {
        name: {"verdict": "correct", "score": 10.0, "performance": {"measure_value": 1.0}}
        for name in ("naive", "reference")
    }
    ladder = measured_ladder(spec, "cpu", reports)
    assert ladder is not None
    problems = ladder_problems(spec, ladder, [])
    validate.store_result(
        validate.ExerciseResult(
            str(spec.path), spec.slug, spec.content_hash, "quick", "cpu", problems=[]
        )
    )
    out = StringIO()
    call_command("sync_content", "--root", str(root), stdout=out)
    assert Item.objects.get(slug="vector-add").is_published  # the quick run passed
    validate.store_result(
        validate.ExerciseResult(
            str(spec.path),
            spec.slug,
            spec.content_hash,
            "perf",
            "cpu",
            problems=problems,
            ladder=ladder,
            ladder_failed=True,
        )
    )
    out = StringIO()
    call_command("sync_content", "--root", str(root), stdout=out)
    assert "vector-add (failed validation" in out.getvalue()
    assert not Item.objects.get(slug="vector-add").is_published
