"""What a TA needs to grade a notebook's hand-graded cells: each answer, its rubric, its score.

Everything here is a read. The student's answer comes from the notebook they submitted (the
Submission's source, never changed once made), found by the cell's nbgrader `grade_id`; the
rubric from the exercise's notebook.toml (`[rubric]`, see graders.notebooks.spec). Markdown is
rendered by courseware.markdown, which escapes any HTML the student wrote; code and outputs are
shown as text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from courseware.markdown import render_markdown
from courseware.submissions import selectors
from courseware.submissions.models import Grading, SavedComment, Submission, SubmissionKind
from graders import SpecError
from graders.notebooks.spec import read_rubrics

# One output shown in full is enough to grade from; a flood of printing is cut.
OUTPUT_SHOWN_CHARS = 20_000
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class Answer:
    cell_type: str  # "markdown", "code" or "raw"
    source: str
    html: SafeString | None = None  # a markdown cell, rendered and escaped
    outputs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ReviewCell:
    grade_id: str
    max_score: float
    answer: Answer | None  # None when the student's notebook no longer has the cell
    rubric: SafeString | None
    score: Decimal | None  # the latest hand grade, if a person gave one
    score_text: str  # what the score box shows: that grade, or what the TA typed
    comment: str
    graded_by: str
    saved_comments: list[SavedComment]


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _cut(text: str) -> str:
    if len(text) <= OUTPUT_SHOWN_CHARS:
        return text
    more = len(text) - OUTPUT_SHOWN_CHARS
    return text[:OUTPUT_SHOWN_CHARS] + "\n" + _("[… %(n)d more characters]") % {"n": more}


def _output_text(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return _text(output.get("text"))
    if kind == "error":
        lines = output.get("traceback") or [f"{output.get('ename')}: {output.get('evalue')}"]
        return _ANSI.sub("", "\n".join(_text(line) for line in lines))
    data = output.get("data") or {}
    if "text/plain" in data:
        return _text(data["text/plain"])
    if any(str(mime).startswith("image/") for mime in data):
        return _("[an image: download the notebook to see it]")
    return ""


def answers_in(notebook_text: str) -> dict[str, Answer]:
    """Every cell of a submitted notebook that has an nbgrader grade_id, by that id."""
    try:
        notebook = json.loads(notebook_text)
    except ValueError:
        return {}
    answers: dict[str, Answer] = {}
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        meta = (cell.get("metadata") or {}).get("nbgrader") or {}
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if not isinstance(grade_id, str) or grade_id in answers:
            continue
        source = _text(cell.get("source"))
        cell_type = str(cell.get("cell_type") or "raw")
        outputs = [
            _cut(text)
            for output in cell.get("outputs") or []
            if isinstance(output, dict) and (text := _output_text(output))
        ]
        html = render_markdown(source) if cell_type == "markdown" else None
        answers[grade_id] = Answer(cell_type, source, html, outputs)
    return answers


@lru_cache(maxsize=32)
def _rubrics(folder: Path, content_hash: str) -> dict[str, dict[str, str]]:
    # Keyed on the content hash too: a sync that changes notebook.toml changes the rubric.
    try:
        return read_rubrics(folder)
    except (SpecError, OSError):
        return {}  # broken content is sync_content's to report; the page shows no rubric


def rubric_for(submission: Submission, grade_id: str, language: str | None) -> SafeString | None:
    """The cell's rubric in the reader's language (English when there is no translation)."""
    folder = Path(settings.GRADERS_EXERCISES_ROOT) / submission.item.source_path
    texts = _rubrics(folder, submission.item.content_hash).get(grade_id)
    if not texts:
        return None
    wanted = "zh" if language and language.startswith("zh") else "en"
    return render_markdown(texts.get(wanted) or texts["en"])


def _person(user: Any) -> str:
    return str(user.get_full_name() or user.get_username())


def review_cells_for(
    submission: Submission, grading: Grading | None, *, language: str | None
) -> list[ReviewCell]:
    """The hand-graded cells of a notebook submission, each with what grading it needs."""
    if submission.kind != SubmissionKind.NOTEBOOK or grading is None:
        return []
    manual = [c for c in grading.report.get("cells") or [] if c.get("needs_manual_grade")]
    if not manual:
        return []
    answers = answers_in(submission.source)
    grades = selectors.latest_manual_grades(submission)
    saved = selectors.saved_comments_for(item=submission.item)
    cells = []
    for cell in manual:
        grade_id = str(cell.get("grade_id"))
        grade = grades.get(grade_id)
        cells.append(
            ReviewCell(
                grade_id=grade_id,
                max_score=float(cell.get("max_score") or 0),
                answer=answers.get(grade_id),
                rubric=rubric_for(submission, grade_id, language),
                score=grade.score if grade else None,
                score_text=f"{grade.score.normalize():f}" if grade else "",
                comment=grade.comment if grade else "",
                graded_by=_person(grade.author) if grade else "",
                saved_comments=saved.get(grade_id, []),
            )
        )
    return cells
