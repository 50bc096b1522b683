"""Short-answer ("explain your reasoning") items: their files, and the keyword pass.

A quiz folder may hold ``short/*.toml``, one item per file, asked after its other questions::

    section = "15.5"
    text = { en = "...", zh = "..." }      # the question (Markdown)
    guide = { en = "...", zh = "..." }     # what a full answer says: shown to TAs only
    [[criteria]]                           # 2 to 4, each worth points
    id = "ridge"                           # lower case, digits, dashes; unique in the item
    points = 1
    en = "..."                             # what the TA looks for
    zh = "..."
    keywords = ["ridge", "拐点"]           # optional: the suggestion pass looks for these

A student writes a few sentences; a TA grades them with the rubric beside the answer. The
keyword pass only suggests criteria to the TA (a criterion is suggested when the answer holds
one of its keywords, case-insensitive): the TA's decision is the grade. The item is worth the
sum of its criteria's points. A mistake is refused naming the file and field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from graders.errors import SpecError
from graders.spec.content import Table, read_toml

LANGUAGES = ("en", "zh")
FOLDER = "short"
MIN_CRITERIA, MAX_CRITERIA = 2, 4
MAX_ANSWER_CHARS = 4000  # a few sentences, with room to spare
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


@dataclass(frozen=True)
class Criterion:
    id: str
    points: Decimal
    text: dict[str, str]
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShortQuestion:
    key: str
    section: str
    text: dict[str, str]
    guide: dict[str, str]
    criteria: tuple[Criterion, ...]
    file: Path

    @property
    def points(self) -> Decimal:
        return sum((c.points for c in self.criteria), Decimal(0))

    def suggested(self, answer: str) -> list[str]:
        """Ids of the criteria whose keywords the answer mentions: a hint for the TA only."""
        text = answer.lower()
        return [c.id for c in self.criteria if any(word.lower() in text for word in c.keywords)]


def _texts(table: Table, key: str) -> dict[str, str]:
    texts = table.sub(key)
    texts.only(LANGUAGES)
    found = {lang: texts.get(lang, str) for lang in LANGUAGES}
    for lang, text in found.items():
        if not text.strip():
            raise texts.fail(lang, "is empty: write the text in both languages")
    return found


def _criterion(item: Table, where: str) -> Criterion:
    item.only(("id", "points", "en", "zh", "keywords"))
    ident = item.get("id", str)
    if not _ID.match(ident):
        raise item.fail("id", f"{ident!r}: use lower-case letters, digits and dashes")
    points = item.number("points", sign="positive")
    keywords = item.get("keywords", list, [])
    if not all(isinstance(word, str) and word.strip() for word in keywords):
        raise item.fail("keywords", "must be a list of non-empty strings")
    text = {lang: item.get(lang, str) for lang in LANGUAGES}
    for lang, value in text.items():
        if not value.strip():
            raise item.fail(lang, f"is empty: say what {where} looks for, in both languages")
    return Criterion(ident, Decimal(str(points)), text, tuple(keywords))


def load_short_question(file: Path) -> ShortQuestion:
    top = read_toml(file)
    top.only(("id", "section", "text", "guide", "criteria"))
    key = top.get("id", str, file.stem)
    if not _ID.match(key):
        raise top.fail("id", f"{key!r}: use lower-case letters, digits and dashes")
    raw = top.get("criteria", list)
    if not MIN_CRITERIA <= len(raw) <= MAX_CRITERIA:
        raise top.fail(
            "criteria", f"has {len(raw)} entries: a rubric needs {MIN_CRITERIA} to {MAX_CRITERIA}"
        )
    criteria = tuple(
        _criterion(top.nested(f"criteria[{i}]", entry), "the TA") for i, entry in enumerate(raw)
    )
    ids = [c.id for c in criteria]
    if len(set(ids)) != len(ids):
        raise top.fail("criteria", "two criteria share an id")
    return ShortQuestion(
        key=key,
        section=top.get("section", str),
        text=_texts(top, "text"),
        guide=_texts(top, "guide"),
        criteria=criteria,
        file=file,
    )


def load_short_questions(quiz_folder: Path) -> tuple[ShortQuestion, ...]:
    """Every ``short/*.toml`` of a quiz folder, in file-name order; () when there is none."""
    files = sorted((Path(quiz_folder) / FOLDER).glob("*.toml"))
    questions = tuple(load_short_question(f) for f in files)
    keys = [q.key for q in questions]
    if len(set(keys)) != len(keys):
        duplicate = next(k for k in keys if keys.count(k) > 1)
        raise SpecError(
            f"{Path(quiz_folder) / FOLDER}: two short-answer files use the id {duplicate!r}"
        )
    return questions


def short_points(quiz_folder: Path) -> Decimal:
    """What a quiz's short-answer items are worth together (0 with none)."""
    return sum((q.points for q in load_short_questions(quiz_folder)), Decimal(0))
