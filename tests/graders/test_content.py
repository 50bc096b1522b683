"""The content kernel (graders/spec/content.py): tables, TOML, content hashes, slugs."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest

from courseware.quizzes.spec import content_hash as quiz_hash
from graders.errors import SpecError
from graders.notebooks.spec import content_hash as notebook_hash
from graders.spec.content import (
    IGNORED_PARTS,
    SlugRegistry,
    Table,
    content_files,
    content_hash,
    read_toml,
)
from graders.spec.exercise import iter_exercises

REPO = Path(__file__).resolve().parents[2]
EXERCISES = REPO / "exercises"
FILE = Path("/content/x.toml")


def table(data: object, where: str = "") -> Table:
    return Table(data, FILE, where)


def form(message: str, dotted: str) -> bool:
    return (
        re.fullmatch(rf"{re.escape(str(FILE))}: field '{re.escape(dotted)}': .+", message)
        is not None
    )


# --------------------------------------------------------------------------- Table


def test_every_failure_names_the_file_and_the_dotted_field() -> None:
    top = table({"scoring": {"curve": {"cpu": {"full_at": "x"}}}})
    curve = top.sub("scoring").sub("curve").sub("cpu")
    with pytest.raises(SpecError) as caught:
        curve.number("full_at")
    assert form(str(caught.value), "scoring.curve.cpu.full_at")
    assert "expected int or float, got string" in str(caught.value)
    assert form(str(top.fail("slug", "bad")), "slug")
    assert form(str(curve.fail("", "bad")), "scoring.curve.cpu")


def test_only_refuses_unknown_keys_and_lists_the_allowed_ones() -> None:
    top = table({"slug": "a", "colour": "red"})
    with pytest.raises(SpecError) as caught:
        top.only(("slug", "title"))
    assert form(str(caught.value), "colour")
    assert "unknown key (allowed: slug, title)" in str(caught.value)
    top.only(("slug", "colour"))


def test_get_checks_kinds_and_never_takes_a_bool_for_a_number() -> None:
    top = table({"points": True, "name": "a", "flag": False, "n": 3})
    with pytest.raises(SpecError, match="got bool"):
        top.get("points", (int, float))
    with pytest.raises(SpecError, match="got bool"):
        top.number("points")
    with pytest.raises(SpecError, match="got bool"):
        top.integer("points")
    assert top.get("flag", bool) is False
    assert top.get("n", int) == 3
    with pytest.raises(SpecError, match="expected int, got string"):
        top.get("name", int)
    with pytest.raises(SpecError) as caught:
        top.get("absent", str)
    assert form(str(caught.value), "absent") and str(caught.value).endswith("missing")
    assert top.get("absent", str, None) is None


def test_sub_and_nested_tables() -> None:
    top = table({"limits": {"setup_s": 1}, "choices": [{"id": "a"}, 3], "title": "x"})
    assert top.sub("limits").dotted("setup_s") == "limits.setup_s"
    assert top.sub("timing", {}).data == {}
    with pytest.raises(SpecError) as caught:
        top.sub("title")
    assert form(str(caught.value), "title") and "expected table, got string" in str(caught.value)
    first = top.nested("choices[0]", top.data["choices"][0])
    assert form(str(first.fail("id", "bad")), "choices[0].id")
    with pytest.raises(SpecError) as caught:
        top.nested("choices[1]", top.data["choices"][1])
    assert form(str(caught.value), "choices[1]")


@pytest.mark.parametrize(
    ("value", "sign", "ok"),
    [
        (1, "positive", True),
        (0, "positive", False),
        (0, "non_negative", True),
        (-0.5, "non_negative", False),
        (-0.5, "any", True),
        (float("inf"), "any", False),
        (float("nan"), "any", False),
    ],
)
def test_number_signs(value: float, sign: str, ok: bool) -> None:
    top = table({"x": value}, "limits")
    if ok:
        assert top.number("x", sign=sign) == value  # type: ignore[arg-type]  # sign comes from the parametrize table as plain str
        return
    with pytest.raises(SpecError) as caught:
        top.number("x", sign=sign)  # type: ignore[arg-type]  # sign comes from the parametrize table as plain str
    assert form(str(caught.value), "limits.x")


def test_integer_and_identifier() -> None:
    top = table({"seed": 1.5, "model": "Model New", "count": 4})
    with pytest.raises(SpecError, match="expected int, got float"):
        top.integer("seed")
    assert top.integer("count", sign="positive") == 4
    assert top.integer("absent", 42) == 42
    with pytest.raises(SpecError, match="must be a Python identifier"):
        top.identifier("model")
    assert top.identifier("absent", "ModelNew") == "ModelNew"


def test_read_toml(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('slug = "a"\n[limits]\nsetup_s = 1\n')
    top = read_toml(good)
    assert top.file == good and top.sub("limits").get("setup_s", int) == 1
    bad = tmp_path / "bad.toml"
    bad.write_text("slug = \n")
    with pytest.raises(SpecError, match=rf"^{re.escape(str(bad))}: not valid TOML: "):
        read_toml(bad)
    bad.write_bytes(b'slug = "\xff"\n')
    with pytest.raises(SpecError, match="not valid TOML"):
        read_toml(bad)
    with pytest.raises(SpecError, match="cannot be read"):
        read_toml(tmp_path / "absent.toml")


# --------------------------------------------------------------------------- slugs


def test_slug_registry_names_both_files() -> None:
    slugs = SlugRegistry()
    slugs.claim("softmax", Path("/c/ch15/softmax"), "exercise.toml")
    slugs.claim("softmax", Path("/c/ch15/softmax"), "exercise.toml")  # the same file again
    with pytest.raises(SpecError) as caught:
        slugs.claim("softmax", Path("/c/ch16/softmax"), "quiz.toml")
    assert str(caught.value) == (
        "/c/ch16/softmax/quiz.toml: field 'slug': 'softmax' is also used by "
        "/c/ch15/softmax/exercise.toml; slugs must be unique across all content"
    )


# --------------------------------------------------------------------------- hashes
# Copies of the three functions the kernel replaced, as they were: the database holds
# their digests, and unchanged content must keep them (a new digest is a new version).


def old_exercise_hash(folder: Path) -> str:  # graders/spec/exercise.py _content_hash
    ignored = ("__pycache__", ".pytest_cache", ".ruff_cache")
    digest = hashlib.sha256()
    files = sorted(
        (
            p
            for p in folder.rglob("*")
            if p.is_file() and not set(p.parts) & set(ignored) and p.suffix != ".pyc"
        ),
        key=lambda p: p.relative_to(folder).as_posix(),
    )
    for path in files:
        name = path.relative_to(folder).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def old_notebook_hash(folder: Path) -> str:  # graders/notebooks/spec.py content_hash
    ignored = ("__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".ruff_cache")
    digest = hashlib.sha256()
    files = sorted(
        (p for p in folder.rglob("*") if p.is_file() and not set(p.parts) & set(ignored)),
        key=lambda p: p.relative_to(folder).as_posix(),
    )
    for path in files:
        name = path.relative_to(folder).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def old_quiz_hash(folder: Path) -> str:  # courseware/quizzes/spec.py content_hash
    files = [folder / "quiz.toml", folder / "answers.py"]
    files += sorted((folder / "questions").glob("*.toml"))
    digest = hashlib.sha256()
    for path in [f for f in files if f.is_file()]:
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def test_the_real_content_keeps_its_digests() -> None:
    exercises = iter_exercises(EXERCISES)
    assert len(exercises) >= 6
    for spec in exercises:
        assert spec.content_hash == old_exercise_hash(spec.path), spec.slug
    notebooks = sorted(p.parent for p in EXERCISES.rglob("notebook.toml"))
    quizzes = sorted(p.parent for p in EXERCISES.rglob("quiz.toml"))
    assert notebooks and quizzes
    for folder in notebooks:
        assert notebook_hash(folder) == old_notebook_hash(folder), folder
    for folder in quizzes:
        assert quiz_hash(folder) == old_quiz_hash(folder), folder
        assert quiz_hash(folder) == quiz_hash(folder)


def test_caches_are_not_content(tmp_path: Path) -> None:
    folder = tmp_path / "ex"
    shutil.copytree(EXERCISES / "ch15" / "vector-add", folder)
    before = content_hash(folder)
    (folder / "__pycache__").mkdir(exist_ok=True)
    (folder / "__pycache__" / "reference.cpython-311.pyc").write_bytes(b"\0")
    (folder / ".ruff_cache").mkdir()
    (folder / ".ruff_cache" / "x").write_text("x")
    assert content_hash(folder) == before
    assert content_hash(folder, IGNORED_PARTS, ignored_suffixes=(".pyc",)) == before
    (folder / "stray.pyc").write_bytes(b"\0")
    assert content_hash(folder, ignored_suffixes=(".pyc",)) == before
    assert content_hash(folder) != before  # a .pyc outside a cache counts unless ignored
    (folder / "stray.pyc").unlink()
    (folder / "starter.py").write_text("changed\n")
    assert content_hash(folder) != before


def test_framings_and_explicit_file_lists(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("bc")
    (tmp_path / "ab").write_text("c")
    assert [p.name for p in content_files(tmp_path)] == ["a", "ab"]
    one = content_hash(tmp_path, files=[tmp_path / "a"])
    assert one != content_hash(tmp_path, files=[tmp_path / "ab"])
    nul = content_hash(tmp_path, files=[tmp_path / "a"], framing="nul-separated")
    assert nul == hashlib.sha256(b"a\0bc\0").hexdigest()
    assert one != nul
