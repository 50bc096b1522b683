"""The content kernel: what every parser of authored files (exercises, notebooks, quizzes,
authoring metadata, KernelBench problems) shares. No Django here.

* :class:`Table`: a TOML table that knows its file and dotted path, so every error has the
  one form ``"{file}: field '{dotted.key}': {problem}"`` and is a :class:`SpecError`;
* :func:`read_toml`: parse a file into a root :class:`Table`;
* :func:`content_hash`: the digest of a content folder stored with each published version;
* :class:`SlugRegistry`: slugs are unique across chapters and kinds, because the site and the
  API name content by slug alone.
"""

from __future__ import annotations

import enum
import hashlib
import math
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from graders.errors import SpecError

# Caches that tools leave in a content folder; never part of the content.
IGNORED_PARTS = ("__pycache__", ".pytest_cache", ".ruff_cache")

Framing = Literal["length-prefixed", "nul-separated"]
Sign = Literal["any", "non_negative", "positive"]


class Missing(enum.Enum):
    """The type of :data:`MISSING`: "no default, the key is required"."""

    MISSING = enum.auto()


MISSING = Missing.MISSING


def field_error(file: Path | str, dotted: str, problem: str) -> SpecError:
    """The one form of a content error: the file, the field, what is wrong with it."""
    return SpecError(f"{file}: field '{dotted}': {problem}")


def kind_names(kinds: tuple[type, ...]) -> str:
    names = {"dict": "table", "list": "array", "str": "string"}
    return " or ".join(names.get(k.__name__, k.__name__) for k in kinds)


def type_name(value: object) -> str:
    return kind_names((type(value),))


class Table:
    """A TOML table plus the file and dotted path that messages about it name."""

    def __init__(self, data: object, file: Path, where: str = "") -> None:
        if not isinstance(data, dict):
            raise field_error(file, where, f"expected table, got {type_name(data)}")
        self.data: dict[str, Any] = data
        self.file = file
        self.where = where

    def dotted(self, key: str) -> str:
        if not key:
            return self.where
        return f"{self.where}.{key}" if self.where else key

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def fail(self, key: str, problem: str) -> SpecError:
        return field_error(self.file, self.dotted(key), problem)

    def only(self, allowed: Iterable[str]) -> None:
        """Refuse keys outside ``allowed``: a misspelt optional key must not pass silently."""
        allowed = sorted(allowed)
        unknown = sorted(set(self.data) - set(allowed))
        if unknown:
            raise self.fail(unknown[0], f"unknown key (allowed: {', '.join(allowed)})")

    def get(self, key: str, kinds: type | tuple[type, ...], default: Any = MISSING) -> Any:
        """The value of ``key`` if it is one of ``kinds``; ``default`` when absent (required
        when no default is given)."""
        if key not in self.data:
            if default is MISSING:
                raise self.fail(key, "missing")
            return default
        return self.check(key, self.data[key], kinds)

    def check(self, key: str, value: object, kinds: type | tuple[type, ...]) -> Any:
        """``value`` (found under ``key``) if it is one of ``kinds``."""
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        # bool is an int subclass in Python; `points = true` is a typo, never a number.
        if isinstance(value, bool) and bool not in kinds:
            raise self.fail(key, f"expected {kind_names(kinds)}, got bool")
        if not isinstance(value, kinds):
            raise self.fail(key, f"expected {kind_names(kinds)}, got {type_name(value)}")
        return value

    def sub(self, key: str, default: Mapping[str, Any] | Missing = MISSING) -> Table:
        """The table under ``key`` (``default`` when absent)."""
        return Table(self.get(key, dict, default), self.file, self.dotted(key))

    def nested(self, key: str, value: object) -> Table:
        """A table found under ``key`` by other means, e.g. ``key = "choices[2]"``."""
        if not isinstance(value, dict):
            raise self.fail(key, f"expected table, got {type_name(value)}")
        return Table(value, self.file, self.dotted(key))

    def number(self, key: str, default: float | Missing = MISSING, *, sign: Sign = "any") -> float:
        """An int or float as float; finite, and of the given ``sign``."""
        value = self.get(key, (int, float), default)
        if not math.isfinite(value):
            raise self.fail(key, f"must be a finite number, got {value}")
        if sign == "positive" and value <= 0:
            raise self.fail(key, f"must be > 0, got {value}")
        if sign == "non_negative" and value < 0:
            raise self.fail(key, f"must be >= 0, got {value}")
        return float(value)

    def integer(self, key: str, default: int | Missing = MISSING, *, sign: Sign = "any") -> int:
        """An int (a float is refused: sizes, counts and seeds are whole)."""
        value = self.get(key, int, default)
        if sign == "positive" and value <= 0:
            raise self.fail(key, f"must be > 0, got {value}")
        if sign == "non_negative" and value < 0:
            raise self.fail(key, f"must be >= 0, got {value}")
        return int(value)

    def identifier(self, key: str, default: str | Missing = MISSING) -> str:
        value: str = self.get(key, str, default)
        if not value.isidentifier():
            raise self.fail(key, f"must be a Python identifier, got {value!r}")
        return value


def read_toml(path: Path) -> Table:
    """Parse ``path`` into its root table; SpecError naming the file when it is not TOML."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        return Table(tomllib.loads(text), path)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None


# --------------------------------------------------------------------------- hashing


def content_files(
    folder: Path,
    ignored_parts: Iterable[str] = IGNORED_PARTS,
    ignored_suffixes: Iterable[str] = (),
) -> list[Path]:
    """Every file under ``folder`` but caches, sorted by relative POSIX path."""
    parts, suffixes = set(ignored_parts), set(ignored_suffixes)
    return sorted(
        (
            p
            for p in folder.rglob("*")
            if p.is_file()
            and not parts & set(p.relative_to(folder).parts)
            and p.suffix not in suffixes
        ),
        key=lambda p: p.relative_to(folder).as_posix(),
    )


def content_hash(
    folder: Path,
    ignored_parts: Iterable[str] = IGNORED_PARTS,
    *,
    ignored_suffixes: Iterable[str] = (),
    files: Iterable[Path] | None = None,
    framing: Framing = "length-prefixed",
) -> str:
    """SHA-256 over the names and bytes of a content folder's files.

    The site stores this digest with each published version and a changed digest makes a
    new version, so the parameters exist to reproduce, byte for byte, the digests each kind
    of content has always had: ``files`` (an explicit list, in its order) replaces the walk
    of ``folder``; ``framing`` "length-prefixed" (exercises, notebooks) writes 8-byte
    big-endian lengths before the name and the data, so ("ab", "c") and ("a", "bc") cannot
    collide; "nul-separated" (quizzes, whose files are all text) writes
    ``name NUL data NUL``.
    """
    chosen = (
        content_files(folder, ignored_parts, ignored_suffixes) if files is None else list(files)
    )
    digest = hashlib.sha256()
    for path in chosen:
        name = path.relative_to(folder).as_posix().encode()
        data = path.read_bytes()
        if framing == "length-prefixed":
            digest.update(len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data)
        else:
            digest.update(name + b"\0" + data + b"\0")
    return digest.hexdigest()


# --------------------------------------------------------------------------- slugs


class SlugRegistry:
    """Slugs claimed so far, each with the file that claimed it."""

    def __init__(self) -> None:
        self.owners: dict[str, Path] = {}

    def claim(self, slug: str, path: Path, file_name: str) -> None:
        """Claim ``slug`` for the content in folder ``path`` (described by ``file_name``);
        SpecError naming both files when another one holds it already."""
        file = path / file_name
        other = self.owners.get(slug)
        if other is not None and other != file:
            raise field_error(
                file,
                "slug",
                f"'{slug}' is also used by {other}; slugs must be unique across all content",
            )
        self.owners[slug] = file
