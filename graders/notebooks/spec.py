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

    [rubric]                                 # optional: what a TA looks for, per hand-graded cell
    explain = { en = "...", zh = "..." }     # grade_id = text, or a table with "en" (required)
                                             # and "zh"; shown beside the answer when grading

Everything else in the folder is part of the content hash (e.g. ``samples/``), but
only the source notebook is used.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from graders.errors import SpecError
from graders.report.types import CellKind
from graders.spec.content import IGNORED_PARTS, SlugRegistry, Table, read_toml
from graders.spec.content import content_hash as folder_hash

TOML_NAME = "notebook.toml"
# Jupyter's autosaves are not content either.
HASH_IGNORED_PARTS = (*IGNORED_PARTS, ".ipynb_checkpoints")


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
    kind: CellKind
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
    # grade_id -> {language: Markdown}: the marking guide of each hand-graded cell that has one.
    rubrics: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def notebook_id(self) -> str:
        return self.source_path.stem

    @property
    def kind(self) -> str:
        return "notebook"


def _parse_limits(table: Table) -> NotebookLimits:
    defaults = NotebookLimits()
    names = [f.name for f in fields(NotebookLimits)]
    table.only(names)
    values: dict[str, Any] = {}
    for name in names:
        if name not in table:
            continue
        default = getattr(defaults, name)
        if isinstance(default, float):
            values[name] = table.number(name, sign="positive")
        else:
            values[name] = table.integer(name, sign="positive")
    limits = NotebookLimits(**values)
    if limits.cell_s > limits.total_s:
        raise table.fail("cell_s", "must be <= limits.total_s")
    return limits


def _parse_rubrics(table: Table) -> dict[str, dict[str, str]]:
    """grade_id -> {language: text}; each value a string (English) or a table with "en"."""
    rubrics: dict[str, dict[str, str]] = {}
    for grade_id, value in table.data.items():
        if isinstance(value, str):
            if not value.strip():
                raise table.fail(grade_id, "must be a non-empty string")
            rubrics[grade_id] = {"en": value}
            continue
        texts = table.nested(grade_id, value)
        texts.only(("en", "zh"))
        if "en" not in texts:
            raise texts.fail("en", "missing")
        for lang in texts.data:
            if not texts.get(lang, str).strip():
                raise texts.fail(lang, "must be a non-empty string")
        rubrics[grade_id] = dict(texts.data)
    return rubrics


def read_rubrics(folder: Path | str) -> dict[str, dict[str, str]]:
    """The ``[rubric]`` of a notebook exercise folder, read without running nbgrader.

    For pages that show the rubric beside an answer; load_notebook_exercise also checks that
    every key names a hand-graded cell. SpecError when the file or the table is malformed.
    """
    top = read_toml(Path(folder) / TOML_NAME)
    return _parse_rubrics(top.sub("rubric", {}))


def _check_rubric_cells(
    rubrics: dict[str, dict[str, str]], cells: tuple[CellInfo, ...], file: Path
) -> None:
    by_person = {cell.grade_id for cell in cells if cell.kind != "autograded_test"}
    for grade_id in rubrics:
        if grade_id not in by_person:
            raise SpecError(
                f"{file}: field 'rubric.{grade_id}': no hand-graded cell has this grade_id "
                f"(hand-graded: {', '.join(sorted(by_person)) or 'none'})"
            )


def content_hash(folder: Path) -> str:
    """The digest stored with each published version of a notebook exercise folder."""
    return folder_hash(folder, HASH_IGNORED_PARTS)


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
        kind: CellKind
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

    from graders.notebooks import nbgrader_steps

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
    from graders.notebooks import nbgrader_steps

    folder = Path(folder).resolve()
    file = folder / TOML_NAME
    if not file.is_file():
        raise SpecError(f"{file}: required file is missing")
    top = read_toml(file)
    top.only(("slug", "title", "source", "limits", "rubric"))
    slug = top.get("slug", str)
    if slug != folder.name:
        raise top.fail("slug", f"{slug!r} must equal the folder name {folder.name!r}")
    title_table = top.sub("title")
    title = {lang: title_table.get(lang, str) for lang in title_table.data}
    if "en" not in title:
        raise title_table.fail("en", "missing")
    for lang, text in title.items():
        if not text.strip():
            raise title_table.fail(lang, "must be a non-empty string")
    source_name = top.get("source", str)
    source_path = (folder / source_name).resolve()
    if source_path.parent != folder or source_path.suffix != ".ipynb":
        raise top.fail("source", "must name an .ipynb file in this folder")
    if not source_path.is_file():
        raise top.fail("source", f"{source_name} not found")
    limits = _parse_limits(top.sub("limits", {}))
    rubrics = _parse_rubrics(top.sub("rubric", {}))
    _, release, cells = prepare_source(source_path, f"{file}: field 'source'")
    _check_rubric_cells(rubrics, cells, file)
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
        rubrics=rubrics,
    )


def spec_for_source(
    source_path: Path | str, limits: NotebookLimits | None = None
) -> NotebookExerciseSpec:
    """A spec for a bare source notebook (no folder, no notebook.toml): default limits."""
    from graders.notebooks import nbgrader_steps

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
    slugs = SlugRegistry()
    for spec in specs:
        slugs.claim(spec.slug, spec.path, TOML_NAME)
    return specs
