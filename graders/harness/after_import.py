"""Run a function on a module as soon as it has been imported, without importing it first.

The harness prepares Triton and torch's compilers for grading before any student code exists,
but importing them ahead would cost every sandbox a second or more that most submissions never
use. :func:`when_imported` patches a module at once when it is already loaded, and otherwise
from a finder at the head of ``sys.meta_path``, right after the module's own code has run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

Patch = Callable[[ModuleType], None]


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds each awaited module as the path finder would, and runs its patch once the module
    has executed; it leaves ``sys.meta_path`` when nothing is awaited any more."""

    def __init__(self) -> None:
        self.awaited: dict[str, Patch] = {}
        self.loaders: dict[str, importlib.abc.Loader] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.awaited:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        self.loaders[fullname], spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loaders[spec.name].create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        name = module.__name__
        loader = self.loaders.pop(name)
        # The module's own loader again, for whatever reads its files through it.
        module.__loader__ = loader
        if module.__spec__ is not None:
            module.__spec__.loader = loader
        loader.exec_module(module)
        patch = self.awaited.pop(name)
        if not self.awaited and self in sys.meta_path:
            sys.meta_path.remove(self)
        patch(module)


_finder = _AfterImport()


def when_imported(name: str, patch: Patch) -> None:
    """Run ``patch`` on module ``name`` now if it is loaded, else right after its import."""
    module = sys.modules.get(name)
    if module is not None:
        patch(module)
        return
    _finder.awaited[name] = patch
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
