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
# Inside an LMS's iframe (LTI), a browser sends only SameSite=None cookies. These stay Lax for
# everyone; courseware.lti.frames.LtiFrameMiddleware sends the session and CSRF cookies
# SameSite=None; Secure only to sessions begun by an LTI launch, over HTTPS. Behind a proxy that
# terminates TLS, set SECURE_PROXY_SSL_HEADER so that Django sees those requests as HTTPS.
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
