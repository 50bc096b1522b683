"""The quiz files behind a published quiz Item, loaded once per version of its files.

Grading needs the answer functions, which live in the quiz's answers.py; the rows in the
database say which questions exist and hold every attempt. A quiz edited on disk but not yet
synced is still read from disk: its content hash changes and the cache loads it again.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from django.conf import settings

from courseware.courses.models import Item
from courseware.quizzes.spec import QuizFileError, QuizSpec, content_hash, load_quiz

logger = logging.getLogger(__name__)
_cache: dict[Path, QuizSpec] = {}
_lock = threading.Lock()


class QuizUnavailable(Exception):
    """The quiz's files are missing or broken; staff must fix and sync them."""


def quiz_folder(item: Item) -> Path:
    return Path(settings.GRADERS_EXERCISES_ROOT) / item.source_path


def quiz_spec_for(item: Item) -> QuizSpec:
    folder = quiz_folder(item).resolve()
    try:
        digest = content_hash(folder)
        with _lock:
            cached = _cache.get(folder)
            if cached is not None and cached.content_hash == digest:
                return cached
        # Validation ran at sync; here only parse, so a page never waits for 100 draws.
        spec = load_quiz(folder, validate=False)
    except (QuizFileError, OSError) as exc:
        logger.error("Quiz %s cannot be loaded: %s", item.slug, exc)
        raise QuizUnavailable(str(exc)) from exc
    with _lock:
        _cache[folder] = spec
    return spec
