"""Check or sync the content files from the site, with a report per item.

It wraps the same services as `manage.py sync_content` (content_load_all, content_write), so the
site and the command accept and refuse the same files. Loading is all or nothing: when any file
is broken nothing is written and the site keeps what was synced before. Only then is every
folder loaded on its own, so the report names each broken file, not just the first one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from courseware.authoring.services import (
    LoadedContent,
    SyncSummary,
    content_load_all,
    content_write,
    exercise_withheld_because,
)
from courseware.courses.models import Item, ItemKind
from courseware.quizzes.spec import find_quiz_folders, load_quiz
from graders import ExerciseSpec, SpecError, load_exercise
from graders.authoring.validate import validation_status
from graders.notebooks import load_notebook_exercise

logger = logging.getLogger(__name__)

CHANGE_LABELS: dict[str, Promise] = {
    "new": _("new"),
    "changed": _("changed"),
    "unchanged": _("unchanged"),
    "republished": _("published again"),
    "removed": _("no longer in the files: unpublished"),
    "failed": _("cannot be loaded"),
}
VALIDATION_LABELS: dict[str, Promise] = {
    "passed": _("validation passed"),
    "failed": _("validation failed"),
    "unknown": _("not validated yet"),
}


@dataclass(frozen=True)
class ItemLine:
    """One item (or one broken folder) of the report."""

    kind: str
    slug: str
    path: str
    change: str  # a key of CHANGE_LABELS
    validation: str = ""  # a key of VALIDATION_LABELS, for coding exercises
    note: str = ""  # why it is withheld, or the error message naming the file and field

    @property
    def change_label(self) -> str:
        return str(CHANGE_LABELS[self.change])

    @property
    def kind_label(self) -> str:
        """The kind in the reader's language ("Coding exercise"), not its stored code."""
        return str(ItemKind(self.kind).label) if self.kind in ItemKind.values else self.kind

    @property
    def validation_label(self) -> str:
        return str(VALIDATION_LABELS.get(self.validation, ""))

    @property
    def failed(self) -> bool:
        return self.change == "failed"


@dataclass
class ContentReport:
    root: Path
    wrote: bool = False
    lines: list[ItemLine] = field(default_factory=list)
    # Messages not tied to one folder (a slug used twice, a missing root, chapter.toml).
    problems: list[str] = field(default_factory=list)
    summary: SyncSummary | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and not any(line.failed for line in self.lines)

    def count(self, change: str) -> int:
        return sum(1 for line in self.lines if line.change == change)


def content_report(*, write: bool, root: Path | None = None) -> ContentReport:
    """Load every content file; with `write`, sync it into the site when nothing is broken."""
    root = Path(root or settings.GRADERS_EXERCISES_ROOT)
    report = ContentReport(root=root)
    try:
        content = content_load_all(root=root)
    except SpecError as exc:
        report.problems.append(str(exc))
        report.lines = _broken_folders(root)
        return report
    except Exception as exc:  # a bug in a loader must still give a report, not a traceback
        logger.exception("Loading the content under %s failed", root)
        report.problems.append(f"{type(exc).__name__}: {exc}")
        return report
    report.lines = _item_lines(content)
    if write:
        try:
            report.summary = content_write(content)
        except SpecError as exc:  # e.g. a quiz slug that an exercise already holds
            report.problems.append(str(exc))
            return report
        report.wrote = True
    return report


def _item_lines(content: LoadedContent) -> list[ItemLine]:
    """What a sync of `content` changes, item by item, compared with the rows now stored."""
    stored = {item.slug: item for item in Item.objects.all()}
    root = content.root.resolve()
    lines = []
    loaded: list[tuple[str, str, Path, str]] = [
        *((ItemKind.EXERCISE, e.slug, e.path, e.content_hash) for e in content.exercises),
        *((ItemKind.NOTEBOOK, n.slug, n.path, n.content_hash) for n in content.notebooks),
        *((ItemKind.QUIZ, q.slug, q.path, q.content_hash) for q in content.quizzes),
    ]
    exercises = {e.slug: e for e in content.exercises}
    for kind, slug, path, digest in loaded:
        before = stored.get(slug)
        if before is None:
            change = "new"
        elif before.content_hash != digest:
            change = "changed"
        else:
            change = "unchanged" if before.is_published else "republished"
        validation, note = "", ""
        if slug in exercises:
            validation, note = _exercise_gate(exercises[slug])
        lines.append(
            ItemLine(kind, slug, _relative(path, root), change, validation=validation, note=note)
        )
    in_files = {slug for _, slug, _, _ in loaded}
    for item in stored.values():
        if item.is_published and item.slug not in in_files:
            lines.append(ItemLine(item.kind, item.slug, item.source_path, "removed"))
    return lines


def _exercise_gate(spec: ExerciseSpec) -> tuple[str, str]:
    """The exercise's recorded validation (`python -m graders validate` writes it; grading
    every sample takes minutes, far too long for a page) and why it would be withheld."""
    withheld = exercise_withheld_because(spec)
    note = str(_("not published: %(why)s") % {"why": withheld}) if withheld else ""
    return validation_status(spec), note


def _broken_folders(root: Path) -> list[ItemLine]:
    """Every content folder loaded on its own: one line per folder that fails."""
    if not root.is_dir():
        return []
    resolved = root.resolve()
    lines: list[ItemLine] = []
    loaders: tuple[tuple[str, Iterable[Path], Callable[[Path], object]], ...] = (
        (ItemKind.EXERCISE, _folders_with(root, "exercise.toml"), load_exercise),
        (ItemKind.NOTEBOOK, _folders_with(root, "notebook.toml"), load_notebook_exercise),
        (ItemKind.QUIZ, find_quiz_folders(root), load_quiz),
    )
    for kind, folders, load in loaders:
        for folder in folders:
            try:
                load(folder)
            except SpecError as exc:
                message = str(exc)
            except Exception as exc:
                logger.exception("Loading %s failed", folder)
                message = f"{type(exc).__name__}: {exc}"
            else:
                continue
            lines.append(
                ItemLine(kind, folder.name, _relative(folder, resolved), "failed", note=message)
            )
    return lines


def _folders_with(root: Path, marker: str) -> list[Path]:
    return sorted(
        p.parent for p in root.rglob(marker) if "samples" not in p.relative_to(root).parts
    )


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)
