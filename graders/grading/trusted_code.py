"""Load the trusted reference/naive implementations, in the trusted process only."""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graders.errors import GraderError


@functools.lru_cache(maxsize=64)
def _load(path: str, entry: str, content_hash: str) -> Callable[..., Any]:
    # content_hash is part of the cache key so an edited exercise is reloaded.
    name = f"_graders_trusted_{content_hash[:16]}_{Path(path).stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise GraderError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise GraderError(f"{path}: failed to import: {exc!r}") from exc
    function = getattr(module, entry, None)
    if not callable(function):
        raise GraderError(f"{path}: defines no function `{entry}`")
    return function


def load(path: Path, entry: str, content_hash: str) -> Callable[..., Any]:
    return _load(str(path), entry, content_hash)
