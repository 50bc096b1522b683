"""The README's architecture walk names real code: every dotted name it cites must import."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
DOTTED = re.compile(r"`((?:graders|courseware|config)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")


def resolve(dotted: str) -> object:
    """Import the longest module prefix, then walk the attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ModuleNotFoundError(dotted)


def architecture_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Architecture")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_every_name_in_the_architecture_walk_resolves() -> None:
    names = sorted(set(DOTTED.findall(architecture_section())))
    assert len(names) >= 20, names  # the walk names each step's function
    missing = []
    for name in names:
        try:
            resolve(name)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{name}: {exc}")
    assert missing == []
