"""Exception types shared by the grading engine.

Two kinds of failure must never be confused:

* ``SpecError``: an exercise folder is malformed (an author's mistake). The message
  names the file and the field so the author can fix it.
* ``GraderError``: the grading machinery itself broke (sandbox missing, harness
  protocol corrupted by *our* bug, calibration failed). Anything a *student* does
  must instead end up as a report with a verdict, never as an exception.
"""

from __future__ import annotations


class SpecError(ValueError):
    """An exercise folder or its exercise.toml is invalid."""


class GraderError(RuntimeError):
    """The grader itself failed; the submission could not be judged."""
