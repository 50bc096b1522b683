"""docs/RELIABILITY.md (written by `make reliability`) lists every hostile case by name."""

from __future__ import annotations

from .corpus import CASES, REPO, case_files


def test_reliability_doc_lists_every_case() -> None:
    text = (REPO / "docs" / "RELIABILITY.md").read_text()
    missing = [
        str(path.relative_to(CASES))
        for path in case_files()
        if f"`{path.relative_to(CASES)}`" not in text
    ]
    assert not missing, f"run `make reliability`: docs/RELIABILITY.md lacks {missing}"
