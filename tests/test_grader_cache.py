"""The test run's grader cache is its own (tests/conftest.py), not the user's."""

from __future__ import annotations

import os
from pathlib import Path

from graders.locations import cache_dir


def test_the_run_does_not_read_the_users_grader_cache() -> None:
    # A `validate --perf` run on the machine writes the user's cache; sync_content reads
    # validation results from cache_dir(), so the run must see a folder of its own.
    assert os.environ.get("GRADERS_CACHE_DIR")
    assert cache_dir() == Path(os.environ["GRADERS_CACHE_DIR"])
    assert cache_dir() != Path.home() / ".cache" / "gpu-courseware"
