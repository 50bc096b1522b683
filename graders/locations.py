"""Where the engine's own files and its cache live.

Kept apart from the modules that use them so that low layers (slots, authoring) can find the
cache without importing the calibration code, and the calibration code can take a slot
without a circle between the two.
"""

from __future__ import annotations

import os
from pathlib import Path

GRADERS_DIR = Path(__file__).resolve().parent
REPO_ROOT = GRADERS_DIR.parent
# Only this folder of the engine is mounted into a sandbox (at /opt/grader/harness).
HARNESS_PARENT = GRADERS_DIR


def cache_dir() -> Path:
    """Peaks, slot locks and validation results: ``$GRADERS_CACHE_DIR`` or the user's cache."""
    env = os.environ.get("GRADERS_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "gpu-courseware"
