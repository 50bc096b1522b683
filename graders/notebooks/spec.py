"""Notebook exercises: parse ``notebook.toml`` and prepare the student version.

A notebook exercise is a folder ``exercises/<chapter>/<slug>/`` holding the
instructor's source notebook, written with nbgrader's markup as it is (solution
regions, autograded test cells with ``### BEGIN HIDDEN TESTS``, manually graded
answers, locked cells), and a ``notebook.toml``::

    slug = "fusion-notebook"                 # must equal the folder name
    title = { en = "...", zh = "..." }       # "en" required
    source = "fusion.ipynb"                  # the source notebook, in this folder

    [limits]                                 # all optional, defaults in NotebookLimits
    cell_s = 60          # one cell
    total_s = 300        # the whole notebook, kernel start included
    memory_mb = 4096     # the kernel's memory
    submission_kb = 2048 # largest accepted .ipynb
    output_kb = 16       # output kept per cell (what the student sees of it)
    flood_kb = 4096      # output of one cell that stops the run

Everything else in the folder is part of the content hash (e.g. ``samples/``), but
only the source notebook is used.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import SpecError

TOML_NAME = "notebook.toml"
_IGNORED_PARTS = ("__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".ruff_cache")


@dataclass(frozen=True)
class NotebookLimits:
    cell_s: float = 60.0
    total_s: float = 300.0
    memory_mb: int = 4096
    submission_kb: int = 2048
    output_kb: int = 16
    flood_kb: int = 4096


@dataclass(frozen=True)
class CellInfo:
    """What the grader knows about one graded cell of the source notebook."""

    grade_id: str
    kind: str  # "autograded_test" | "manual" | "task"
    max_score: float
    hidden_tests: bool


@dataclass(frozen=True)
class NotebookExerciseSpec:
    slug: str
    chapter: str
    title: dict[str, str]
    path: Path
    source_path: Path
    content_hash: str
    max_score: float
    limits: NotebookLimits
    cells: tuple[CellInfo, ...]
    release: bytes = field(repr=False)  # the student version (.ipynb bytes)

    @property
    def notebook_id(self) -> str:
        return self.source_path.stem

    @property
    def kind(self) -> str:
        return "notebook"


def _fail(file: Path, key: str, message: str) -> SpecError:
    return SpecError(f"{file}: field '{key}': {message}")


def _get(data: dict[str, Any], key: str, kinds: tuple[type, ...], file: Path, where: str) -> Any:
    if key not in data:
        raise _fail(file, where + key, "missing")
    value = data[key]
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise _fail(file, where + key, f"expected {names}, got {type(value).__name__}")
    return value


def _parse_limits(data: Any, file: Path) -> NotebookLimits:
    if not isinstance(data, dict):
        raise _fail(file, "limits", "must be a table")
    defaults = NotebookLimits()
    allowed = {f.name for f in fields(NotebookLimits)}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise _fail(file, f"limits.{unknown[0]}", f"unknown key (allowed: {sorted(allowed)})")
    values: dict[str, Any] = {}
    for name in allowed:
        if name not in data:
            continue
        default = getattr(defaults, name)
        kinds: tuple[type, ...] = (int, float) if isinstance(default, float) else (int,)
        value = _get(data, name, kinds, file, "limits.")
        if value <= 0:
            raise _fail(file, f"limits.{name}", "must be > 0")
        values[name] = float(value) if isinstance(default, float) else int(value)
    limits = NotebookLimits(**values)
    if limits.cell_s > limits.total_s:
        raise _fail(file, "limits.cell_s", "must be <= limits.total_s")
    return limits


def content_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(
        (p for p in folder.rglob("*") if p.is_file() and not set(p.parts) & set(_IGNORED_PARTS)),
        key=lambda p: p.relative_to(folder).as_posix(),
    )
    for path in files:
        name = path.relative_to(folder).as_posix().encode()
        data = path.read_bytes()
        # Length-prefixed so ("ab", "c") and ("a", "bc") cannot collide.
        digest.update(len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def _cell_infos(source: Any, release: Any) -> tuple[CellInfo, ...]:
    from nbgrader import utils

    released = {
        cell.metadata.nbgrader["grade_id"]: cell
        for cell in release.cells
        if "grade_id" in cell.metadata.get("nbgrader", {})
    }
    infos = []
    for cell in source.cells:
        if not (utils.is_grade(cell) or utils.is_task(cell)):
            continue
        meta = cell.metadata.nbgrader
        grade_id = meta["grade_id"]
        if utils.is_task(cell):
            kind = "task"
        elif utils.is_solution(cell) or cell.cell_type != "code":
            kind = "manual"
        else:
            kind = "autograded_test"
        released_source = released[grade_id].source if grade_id in released else ""
        infos.append(
            CellInfo(
                grade_id=grade_id,
                kind=kind,
                max_score=float(meta.get("points", 0.0)),
                hidden_tests=kind == "autograded_test" and released_source != cell.source,
            )
        )
    return tuple(infos)


def prepare_source(source_path: Path, where: str) -> tuple[Any, Any, tuple[CellInfo, ...]]:
    """(source after generate's saving step, release, graded cells) for a source .ipynb;
    SpecError naming ``where`` when nbgrader cannot make an assignment of it."""
    import nbformat

    from . import nbgrader_steps

    try:
        source = nbformat.read(source_path, as_version=4)
        nbformat.validate(source)
    except Exception as exc:
        raise SpecError(f"{where}: not a valid notebook: {exc}") from None
    ids = [
        cell.metadata["nbgrader"].get("grade_id")
        for cell in source.cells
        if isinstance(cell.metadata.get("nbgrader"), dict)
    ]
    duplicated = sorted({i for i in ids if i is not None and ids.count(i) > 1})
    if duplicated:
        raise SpecError(f"{where}: grade_id {duplicated[0]!r} is used by more than one cell")
    try:
        with nbgrader_steps.throwaway_gradebook(source_path.stem) as book:
            saved, release = nbgrader_steps.generate(source, book)
    except Exception as exc:
        raise SpecError(f"{where}: nbgrader could not generate the assignment: {exc}") from None
    cells = _cell_infos(saved, release)
    if not cells:
        raise SpecError(f"{where}: no graded cells (nbgrader metadata 'grade' or 'task')")
    return saved, release, cells


def load_notebook_exercise(folder: Path | str) -> NotebookExerciseSpec:
    """Load and check one notebook exercise folder; SpecError names the file and field."""
    from . import nbgrader_steps

    folder = Path(folder).resolve()
    file = folder / TOML_NAME
    if not file.is_file():
        raise SpecError(f"{file}: required file is missing")
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"{file}: not valid TOML: {exc}") from None
    unknown = sorted(set(raw) - {"slug", "title", "source", "limits"})
    if unknown:
        raise _fail(file, unknown[0], "unknown key (allowed: limits, slug, source, title)")
    slug = _get(raw, "slug", (str,), file, "")
    if slug != folder.name:
        raise _fail(file, "slug", f"{slug!r} must equal the folder name {folder.name!r}")
    title = _get(raw, "title", (dict,), file, "")
    if "en" not in title:
        raise _fail(file, "title.en", "missing")
    for lang, text in title.items():
        if not isinstance(text, str) or not text.strip():
            raise _fail(file, f"title.{lang}", "must be a non-empty string")
    source_name = _get(raw, "source", (str,), file, "")
    source_path = (folder / source_name).resolve()
    if source_path.parent != folder or source_path.suffix != ".ipynb":
        raise _fail(file, "source", "must name an .ipynb file in this folder")
    if not source_path.is_file():
        raise _fail(file, "source", f"{source_name} not found")
    limits = _parse_limits(raw.get("limits", {}), file)
    _, release, cells = prepare_source(source_path, f"{file}: field 'source' ({source_name})")
    return NotebookExerciseSpec(
        slug=slug,
        chapter=folder.parent.name,
        title=dict(title),
        path=folder,
        source_path=source_path,
        content_hash=content_hash(folder),
        max_score=sum(cell.max_score for cell in cells),
        limits=limits,
        cells=cells,
        release=nbgrader_steps.to_bytes(release),
    )


def spec_for_source(
    source_path: Path | str, limits: NotebookLimits | None = None
) -> NotebookExerciseSpec:
    """A spec for a bare source notebook (no folder, no notebook.toml): default limits."""
    from . import nbgrader_steps

    source_path = Path(source_path).resolve()
    if not source_path.is_file():
        raise SpecError(f"{source_path}: source notebook not found")
    _, release, cells = prepare_source(source_path, str(source_path))
    digest = hashlib.sha256(source_path.read_bytes()).hexdigest()
    return NotebookExerciseSpec(
        slug=source_path.stem,
        chapter="",
        title={"en": source_path.stem},
        path=source_path.parent,
        source_path=source_path,
        content_hash=digest,
        max_score=sum(cell.max_score for cell in cells),
        limits=limits or NotebookLimits(),
        cells=cells,
        release=nbgrader_steps.to_bytes(release),
    )


def iter_notebook_exercises(root: Path | str) -> list[NotebookExerciseSpec]:
    """Every folder under ``root`` holding a notebook.toml, sorted by path."""
    root = Path(root)
    if not root.is_dir():
        raise SpecError(f"{root}: exercises root not found")
    folders: Iterable[Path] = sorted(
        p.parent for p in root.rglob(TOML_NAME) if "samples" not in p.relative_to(root).parts
    )
    specs = [load_notebook_exercise(folder) for folder in folders]
    seen: dict[str, Path] = {}
    for spec in specs:
        if spec.slug in seen:
            raise SpecError(f"{spec.path}: slug {spec.slug!r} already used by {seen[spec.slug]}")
        seen[spec.slug] = spec.path
    return specs
