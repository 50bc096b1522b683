"""Tracebacks that show the student's code, never the grader's wrappers.

New reports are already clean: the harness keeps only the submission's frames, and notebook
grading (graders/notebooks/grading.py) drops the hidden-test loader's frame. Reports stored
before that still hold them, and a frame from the grader's own files can slip through when an
error passes through it; this removes both at display time, so every report reads the same.
"""

from __future__ import annotations

import re

# The one-line loader graders/notebooks/wrapping.py sends for each test cell.
LOADER_MARK = "exec(__import__('marshal')"
# Paths of the grader's own files, inside the sandbox (/opt/grader) or in a checkout.
_OUR_PATHS = ("/opt/grader/", "/graders/", "graders/harness/")
_PYTHON_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+')
# IPython's frame headers: "Cell In[3], line 1" and "File <test x>:3" / "File /path:3".
_IPYTHON_FRAME = re.compile(r"^(Cell In\[\d+\], line \d+|File \S.*:\d+)\s*$")


def _is_ours(frame: list[str]) -> bool:
    text = "".join(frame)
    if LOADER_MARK in text:
        return True
    match = _PYTHON_FRAME.match(frame[0])
    return match is not None and any(part in match["path"] for part in _OUR_PATHS)


def _frames(lines: list[str]) -> list[list[str]]:
    """Group lines into frames: a header line and the code lines under it; others alone."""
    groups: list[list[str]] = []
    in_frame = False
    for line in lines:
        if _PYTHON_FRAME.match(line) or _IPYTHON_FRAME.match(line):
            groups.append([line])
            in_frame = True
        elif in_frame and line.strip() and line[:1] in (" ", "-"):
            # Indented code under a Python frame, or IPython's "----> 3 code" listing.
            groups[-1].append(line)
        elif in_frame and not line.strip() and _IPYTHON_FRAME.match(groups[-1][0]):
            groups[-1].append(line)  # IPython ends each frame with a blank line
            in_frame = False
        else:
            groups.append([line])
            in_frame = False
    return groups


def clean_traceback(text: str | None) -> str:
    """``text`` without the frames of the grader's files and the notebook loader."""
    if not text:
        return ""
    kept = [frame for frame in _frames(text.splitlines(keepends=True)) if not _is_ours(frame)]
    return "".join(line for frame in kept for line in frame)
