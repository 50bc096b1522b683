"""The order in which students meet a chapter's items, read from the chapter's `chapter.toml`.

A chapter folder (`exercises/<chapter>/`) may hold a `chapter.toml` naming every item folder of
the chapter (coding exercises, notebooks, quizzes) by slug, in the order students should meet
them; the dashboard and the lists follow it::

    # exercises/ch15/chapter.toml
    order = ["vector-add", "softmax", "layernorm", "ch15-gpu-fundamentals-quiz"]

One file per chapter rather than a number in each item's spec: moving an exercise is then one
edit in one place, and two items can never claim the same position. A slug that is not an item
of the chapter, a slug listed twice, or an item left out is refused with the file and the field,
so a typo never silently reorders the chapter. A chapter without the file lists its items by
slug.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from graders.spec.content import read_toml

CHAPTER_FILE = "chapter.toml"


def chapter_positions(items: Iterable[tuple[str, Path]]) -> dict[str, int]:
    """Each item's 1-based position in its chapter, for items whose chapter has a chapter.toml.

    `items` holds (slug, the item's own folder); the chapter is the folder above it.
    SpecError (naming chapter.toml and the field) when the order does not fit the folders.
    """
    by_chapter: dict[Path, list[str]] = defaultdict(list)
    for slug, folder in items:
        by_chapter[folder.resolve().parent].append(slug)
    positions: dict[str, int] = {}
    for chapter, slugs in sorted(by_chapter.items()):
        path = chapter / CHAPTER_FILE
        if path.is_file():
            order = read_order(path, slugs=set(slugs))
            positions.update({slug: n for n, slug in enumerate(order, start=1)})
    return positions


def read_order(path: Path, *, slugs: set[str]) -> list[str]:
    """The `order` list of one chapter.toml, checked against the chapter's item slugs."""
    table = read_toml(path)
    table.only(("order",))
    order = table.get("order", list)
    known = ", ".join(sorted(slugs))
    seen: set[str] = set()
    for n, slug in enumerate(order):
        where = f"order[{n}]"
        table.check(where, slug, str)
        if slug not in slugs:
            raise table.fail(
                where, f"no item '{slug}' in this chapter's folders (its items: {known})"
            )
        if slug in seen:
            raise table.fail(where, f"'{slug}' is listed twice; list each item once")
        seen.add(slug)
    missing = sorted(slugs - seen)
    if missing:
        raise table.fail(
            "order",
            f"{', '.join(repr(s) for s in missing)} not listed; add each slug where students "
            "should meet it in the chapter",
        )
    return list(order)
