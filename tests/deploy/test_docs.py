"""docs/DEPLOY.md names only deployment files that exist, and every deploy script is in it."""

from __future__ import annotations

import re

from .layout import DEPLOY, ROOT, SCRIPTS

PAGE = ROOT / "docs" / "DEPLOY.md"


def test_every_deploy_path_the_page_names_exists():
    text = PAGE.read_text()
    named = set(re.findall(r"deploy/[\w./@-]*[\w@]", text))
    assert named
    for path in named:
        if "*" in path:
            continue
        assert (ROOT / path).exists(), f"docs/DEPLOY.md names {path}, which does not exist"


def test_every_deploy_script_and_unit_is_on_the_page():
    text = PAGE.read_text()
    for script in SCRIPTS:
        assert f"deploy/{script.name}" in text, script.name
    for unit in (DEPLOY / "systemd").iterdir():
        assert unit.name.split("@")[0].split(".")[0] in text, unit.name


def test_the_readme_points_at_the_page():
    assert "docs/DEPLOY.md" in (ROOT / "README.md").read_text()
