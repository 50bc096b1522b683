"""A private validation cache per test session (peaks reused, so nothing recalibrates)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from graders.locations import cache_dir


@pytest.fixture(scope="session")
def validation_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("graders-cache")
    peaks = cache_dir() / "peaks.json"
    if peaks.is_file():
        shutil.copy(peaks, folder / "peaks.json")
    return folder


@pytest.fixture
def cache_env(validation_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GRADERS_CACHE_DIR", str(validation_cache))
    return validation_cache
