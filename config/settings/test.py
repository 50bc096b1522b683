"""Tests: the same stack as production where DATABASE_URL/REDIS_URL are set, else embedded."""

import os
import tempfile
from pathlib import Path

from config.settings.base import *  # noqa: F403  (a settings layer takes every base setting)
from config.settings.base import DATABASES, REDIS_URL, VAR_DIR, filesystem_broker

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast test logins
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory: the end-to-end tests' worker process must see the same database.
    # One file per test run, so two runs at once on one machine don't share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-courseware-{os.getpid()}.sqlite3")}

if not REDIS_URL and "CELERY_BROKER_URL" not in os.environ:
    # A fresh broker folder per test run, so no message from an earlier run is delivered.
    # The end-to-end tests hand this folder to their worker through the environment.
    if "CELERY_FS_BROKER_DIR" not in os.environ:
        os.environ["CELERY_FS_BROKER_DIR"] = tempfile.mkdtemp(prefix="courseware-test-broker-")
    CELERY_FS_BROKER_DIR = Path(os.environ["CELERY_FS_BROKER_DIR"])
    CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS = filesystem_broker(CELERY_FS_BROKER_DIR)

# A busy test machine may leave a grading's points provisional: its automatic regrade comes
# an hour later, after any test that is not about it (tests/courseware/submissions/
# test_provisional.py runs the regrade itself).
GRADING_PROVISIONAL_RETRY_S = 3600
