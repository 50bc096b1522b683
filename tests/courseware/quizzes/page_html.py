"""A small HTML tree for the page tests (standard library only): find an element by id or
class and read its text, so a test checks *where* something shows, not only that it does."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    @property
    def text(self) -> str:
        """The text inside, with runs of white space made one space."""
        parts = [c if isinstance(c, str) else c.text for c in self.children]
        return " ".join("".join(parts).split())

    def iter(self) -> list[Element]:
        found = []
        for child in self.children:
            if isinstance(child, Element):
                found.append(child)
                found.extend(child.iter())
        return found

    def by_id(self, id_: str) -> Element | None:
        return next((e for e in self.iter() if e.attrs.get("id") == id_), None)

    def all(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        return [
            e
            for e in self.iter()
            if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)
        ]

    def one(self, tag: str | None = None, cls: str | None = None) -> Element:
        found = self.all(tag, cls)
        assert len(found) == 1, f"{len(found)} <{tag or '*'} class={cls}> where one was expected"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        # Close up to the matching open element; a stray end tag is ignored.
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str | bytes) -> Element:
    builder = _Builder()
    builder.feed(html.decode() if isinstance(html, bytes) else html)
    builder.close()
    return builder.root


def question_block(html: str | bytes, number: int) -> Element:
    """The `<section id="q-<number>" class="question">` of a quiz page; fails if absent."""
    block = parse(html).by_id(f"q-{number}")
    assert block is not None, f"question {number} is not on this page"
    assert block.tag == "section" and "question" in block.classes
    return block
