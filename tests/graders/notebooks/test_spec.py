"""notebook.toml parsing, the release version, and errors that name file and field."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from graders.errors import SpecError
from graders.notebooks import (
    iter_notebook_exercises,
    load_notebook_exercise,
    release_notebook,
)

from .conftest import HIDDEN_MARKER, REPO, TINY_TOML, tiny_source

FUSION = REPO / "exercises" / "ch15" / "fusion-notebook"


def _folder(tmp_path: Path, toml: str = TINY_TOML, name: str = "tiny") -> Path:
    folder = tmp_path / "ch99" / name
    folder.mkdir(parents=True)
    nbformat.write(tiny_source(), folder / "tiny.ipynb")
    (folder / "notebook.toml").write_text(toml)
    return folder


def test_load_gives_the_fields_the_site_needs(tiny_spec) -> None:
    assert tiny_spec.slug == "tiny" and tiny_spec.chapter == "ch99"
    assert tiny_spec.title == {"en": "Tiny", "zh": "小练习"}
    assert tiny_spec.max_score == 7
    assert len(tiny_spec.content_hash) == 64
    assert tiny_spec.limits.cell_s == 4
    kinds = {c.grade_id: (c.kind, c.hidden_tests) for c in tiny_spec.cells}
    assert kinds == {
        "test-add": ("autograded_test", False),
        "test-hidden": ("autograded_test", True),
        "why": ("manual", False),
        "test-late": ("autograded_test", False),
    }


def test_release_has_no_solutions_and_no_hidden_tests(tiny_spec) -> None:
    release = nbformat.reads(tiny_spec.release.decode(), as_version=4)
    nbformat.validate(release)
    text = tiny_spec.release.decode()
    assert HIDDEN_MARKER not in text and "return a + b" not in text and "Because." not in text
    assert "raise NotImplementedError()" in text
    locked = [c for c in release.cells if c.metadata.nbgrader.get("grade_id") == "test-add"]
    assert locked[0].metadata.nbgrader["checksum"]  # nbgrader's ComputeChecksums ran
    assert release_notebook(tiny_spec) == tiny_spec.release


def test_chapter_notebook_loads() -> None:
    spec = load_notebook_exercise(FUSION)
    assert spec.slug == "fusion-notebook" and spec.chapter == "ch15"
    assert set(spec.title) == {"en", "zh"}
    assert spec.max_score == 9
    assert "BEGIN HIDDEN TESTS" not in spec.release.decode()
    assert [s.slug for s in iter_notebook_exercises(REPO / "exercises")] == ["fusion-notebook"]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda t: t.replace('slug = "tiny"', 'slug = "other"'), "'slug'"),
        (lambda t: t.replace('source = "tiny.ipynb"', 'source = "missing.ipynb"'), "'source'"),
        (lambda t: t.replace('source = "tiny.ipynb"', 'source = "../x.ipynb"'), "'source'"),
        (lambda t: t.replace('title = { en = "Tiny", zh = "小练习" }', 'title = { zh = "小" }'),
         "'title.en'"),
        (lambda t: t.replace("cell_s = 4", 'cell_s = "4"'), "'limits.cell_s'"),
        (lambda t: t.replace("cell_s = 4", "cell_s = 400"), "'limits.cell_s'"),
        (lambda t: t.replace("cell_s = 4", "cells = 4"), "'limits.cells'"),
        (lambda t: "extra = 1\n" + t, "'extra'"),
    ],
)  # fmt: skip
def test_malformed_toml_names_file_and_field(tmp_path: Path, edit, field: str) -> None:
    folder = _folder(tmp_path, edit(TINY_TOML))
    with pytest.raises(SpecError) as info:
        load_notebook_exercise(folder)
    assert str(folder / "notebook.toml") in str(info.value)
    assert field in str(info.value)


def test_malformed_source_notebook_is_a_spec_error(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "tiny.ipynb").write_text("not json")
    with pytest.raises(SpecError, match="not a valid notebook"):
        load_notebook_exercise(folder)
    nb = tiny_source()
    nb.cells[2].metadata.nbgrader["grade_id"] = "answer"  # duplicated grade_id
    nbformat.write(nb, folder / "tiny.ipynb")
    with pytest.raises(SpecError, match="grade_id 'answer'"):
        load_notebook_exercise(folder)
    nb = tiny_source()
    nb.cells[1].source = "### BEGIN SOLUTION\nx = 1\n"  # unterminated solution region
    nbformat.write(nb, folder / "tiny.ipynb")
    with pytest.raises(SpecError, match="could not generate"):
        load_notebook_exercise(folder)


def test_duplicate_slugs_are_refused(tmp_path: Path) -> None:
    _folder(tmp_path)
    other = tmp_path / "ch98" / "tiny"
    shutil.copytree(tmp_path / "ch99" / "tiny", other)
    with pytest.raises(SpecError, match="field 'slug': 'tiny' is also used by"):
        iter_notebook_exercises(tmp_path)
