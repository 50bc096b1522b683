"""What a notebook exercise asks: its graded tasks, each with its title and points.

Read from the instructor's source notebook (the one notebook.toml names): every cell with
nbgrader's `grade` or `task` metadata earns points, and belongs to the task whose `## heading`
comes before it. Headings are written "English · 中文", so the page shows the reader's half.
The notebook is read as JSON here (no nbgrader run: that takes a second per page view).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings

from courseware.courses.models import Item, ItemKind

HIDDEN_TESTS_MARK = "### BEGIN HIDDEN TESTS"
TITLE_SEPARATOR = " · "


@dataclass(frozen=True)
class NotebookTask:
    title_en: str
    title_zh: str
    points: float
    by_person: bool  # some of its points are given by a TA reading the answer
    hidden_tests: bool  # some of its points come from tests the student cannot see

    def title(self, language: str | None) -> str:
        if language and language.startswith("zh") and self.title_zh:
            return self.title_zh
        return self.title_en


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _heading(cell: dict[str, Any]) -> tuple[str, str] | None:
    """(English, Chinese) of a markdown cell that starts with a heading below the title."""
    first = _text(cell.get("source")).strip().splitlines()[:1]
    if cell.get("cell_type") != "markdown" or not first or not first[0].startswith("##"):
        return None
    title = first[0].lstrip("#").strip()
    english, _sep, chinese = title.partition(TITLE_SEPARATOR)
    english, chinese = english.strip(), chinese.strip()
    number = english.split(" ", 1)[0]
    if chinese and number.endswith(".") and number[:-1].isdigit():
        chinese = f"{number} {chinese}"  # "3. Write the fused block · 写出融合版本"
    return english, chinese


def tasks_of(notebook: dict[str, Any]) -> list[NotebookTask]:
    """The graded tasks of a source notebook (nbgrader markup), in the notebook's order."""
    tasks: list[NotebookTask] = []
    heading = ("", "")
    for cell in notebook.get("cells") or []:
        found = _heading(cell)
        if found is not None:
            heading = found
            continue
        meta = (cell.get("metadata") or {}).get("nbgrader") or {}
        if not (meta.get("grade") or meta.get("task")):
            continue
        points = float(meta.get("points") or 0)
        by_person = bool(meta.get("task") or meta.get("solution") or cell["cell_type"] != "code")
        hidden = HIDDEN_TESTS_MARK in _text(cell.get("source"))
        if tasks and (tasks[-1].title_en, tasks[-1].title_zh) == heading:
            last = tasks.pop()
            points += last.points
            by_person, hidden = by_person or last.by_person, hidden or last.hidden_tests
        tasks.append(NotebookTask(heading[0], heading[1], points, by_person, hidden))
    return tasks


@lru_cache(maxsize=16)
def _tasks_in(folder: Path, content_hash: str) -> tuple[NotebookTask, ...]:
    # Keyed on the content hash too: a sync that changes the notebook changes the tasks.
    try:
        source = tomllib.loads((folder / "notebook.toml").read_text("utf-8"))["source"]
        notebook = json.loads((folder / source).read_text("utf-8"))
    except (OSError, KeyError, ValueError):
        return ()  # broken content: sync_content reports it; the page shows no task list
    return tuple(tasks_of(notebook))


def notebook_tasks(item: Item) -> list[NotebookTask]:
    """The tasks of a notebook exercise item; empty for other items."""
    if item.kind != ItemKind.NOTEBOOK:
        return []
    folder = Path(settings.GRADERS_EXERCISES_ROOT) / item.source_path
    return list(_tasks_in(folder, item.content_hash))
