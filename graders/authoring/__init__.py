"""Authoring tools: validate exercises before students see them, import KernelBench problems.

Nothing here is needed to grade; the site asks :func:`validation_status` before it
publishes an exercise, and ``python -m graders validate|import-kernelbench`` drive the rest.
"""

from __future__ import annotations

from graders.authoring.meta import AuthoringMeta, load_meta
from graders.authoring.validate import validation_status

__all__ = ["AuthoringMeta", "load_meta", "validation_status"]
