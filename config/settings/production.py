"""Production: PostgreSQL and Redis are required, secrets come from the environment."""

import os

from config.settings.base import *  # noqa: F403  (a settings layer takes every base setting)
from config.settings.base import DATABASES, REDIS_URL

DEBUG = False
SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise RuntimeError("Production needs DATABASE_URL pointing at PostgreSQL.")
if not REDIS_URL:
    raise RuntimeError("Production needs REDIS_URL for the Celery broker.")
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
