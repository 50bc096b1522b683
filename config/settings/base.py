"""Settings shared by every environment, driven by environment variables.

With no variables set the site runs on embedded defaults that need no server:
SQLite in ``var/`` and kombu's filesystem transport as the Celery broker. Setting
``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL`` switches to the production stack.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("COURSEWARE_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


# --- Core -------------------------------------------------------------------------------------

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "insecure-local-development-key-change-me")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "courseware.accounts",
    "courseware.courses",
    "courseware.submissions",
    "courseware.authoring",
    "courseware.gradebook",
    "courseware.quizzes",
    "courseware.roofline",
    "courseware.instructor",
    "courseware.fleet",
    "courseware.lti",
    "courseware.similarity",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before the session, CSRF and clickjacking middleware: for sessions begun by an LTI launch
    # it lets the LMS frame the pages and sends those cookies SameSite=None (courseware/lti).
    "courseware.lti.frames.LtiFrameMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "courseware.accounts.timezone.TimeZoneMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # While PostgreSQL is unreachable, pages and the API answer 503 (courseware/outage.py).
    "courseware.outage.DatabaseOutageMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "courseware" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "courseware.courses.context_processors.course_roles",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------------

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{VAR_DIR / 'courseware.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker write to the same file: wait for the lock, don't fail.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30
    # That wait needs BEGIN IMMEDIATE. Django's plain (deferred) BEGIN reads first and asks
    # for the write lock at the first write; when another connection is writing just then,
    # SQLite cannot let the two wait on each other and answers "database is locked" at once,
    # timeout or not. Two students submitting in the same second got a 503 that way
    # (bench/load.py --embedded, issue 26), and a worker's claim or record meeting it would
    # pause in db_retry (0.5 s and up). Taking the write lock at the start of each atomic block
    # makes a second writer wait its turn (milliseconds); reads outside atomic blocks are not
    # affected.
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A database host that stops answering (network cut, host down) would hold every request
    # and worker for the kernel's timeouts: ~2 minutes to connect, ~15 for a query on an open
    # connection. Give up sooner instead, so pages answer 503 and workers retry
    # (courseware/outage.py, courseware/submissions/db_retry.py). The same names in
    # DATABASE_URL's query (`?connect_timeout=5`) override these.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].setdefault(
        "connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT_S", 10)
    )
    DATABASES["default"]["OPTIONS"].setdefault(
        "tcp_user_timeout", env_int("DATABASE_TCP_USER_TIMEOUT_MS", 30_000)
    )
    # Keep each web and worker process's connection for a minute instead of opening one per
    # request: a new PostgreSQL backend per request cost a quarter of an API call's time
    # (bench/load: 26 -> 20 ms at the median). Each request first checks the connection it
    # reuses, so one broken by an outage is replaced, not used.
    DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

# --- Auth -------------------------------------------------------------------------------------

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

# --- Internationalisation ---------------------------------------------------------------------

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "courseware" / "locale"]
USE_I18N = True
TIME_ZONE = "UTC"
USE_TZ = True

# --- Static files -----------------------------------------------------------------------------

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# The site's own stylesheet and scripts, and vendor/ (CodeMirror), which `make install` copies
# from node_modules (git-ignored).
STATICFILES_DIRS = [BASE_DIR / "courseware" / "static"]

# --- Celery -----------------------------------------------------------------------------------

REDIS_URL = os.environ.get("REDIS_URL", "")


FILESYSTEM_POLL_S = 0.05


def filesystem_broker(folder: Path) -> tuple[str, dict[str, object]]:
    """kombu's filesystem transport: messages are files in one folder that every process on
    this machine shares. It needs no server, which is what `make run` on a fresh machine needs."""
    for sub in ("processed", "control"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    return "filesystem://", {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"),  # default is ./control in the CWD
        "store_processed": False,
        # kombu looks for new message files once a second by default: a submission then
        # waited 0.5 s on average (up to 1 s) before a worker saw it, and its grade as long
        # again before the site did. A listing of one folder every 50 ms costs nothing.
        "polling_interval": FILESYSTEM_POLL_S,
    }


CELERY_FS_BROKER_DIR = Path(os.environ.get("CELERY_FS_BROKER_DIR", VAR_DIR / "broker"))
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        # A task not acknowledged within this time is handed to another worker; it must be
        # longer than the longest grading or a slow grading would be delivered twice.
        "visibility_timeout": 3600,
    }
else:
    CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS = filesystem_broker(CELERY_FS_BROKER_DIR)
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", CELERY_BROKER_URL)
CELERY_TASK_IGNORE_RESULT = True  # results live in the database, not in a result backend
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True  # a worker that dies mid-grading leaves the message for another
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # one job per device slot at a time
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 600)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 660)
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- LTI grade passback (courseware/lti) ------------------------------------------------------

# Scores go to LMSes from their own queue, so a slow or down LMS never holds a grading worker:
# `celery -A config worker -Q lti` (scripts/run_local.py's worker consumes it too).
LTI_PASSBACK_QUEUE = os.environ.get("LTI_PASSBACK_QUEUE", "lti")
# Similarity reports (courseware/similarity) are staff work, not grading: they share that queue
# so a grading worker's device slot is never taken by one.
CELERY_TASK_ROUTES = {
    "lti.*": {"queue": LTI_PASSBACK_QUEUE},
    "similarity.*": {"queue": LTI_PASSBACK_QUEUE},
}
LTI_PASSBACK_BACKOFF_S = float(os.environ.get("LTI_PASSBACK_BACKOFF_S", "30"))  # then ×2 each
LTI_PASSBACK_MAX_RETRIES = env_int("LTI_PASSBACK_MAX_RETRIES", 8)  # 30 s … ~2 h, then failed
# The site's address as LMSes must see it, when the request's host and scheme are not it.
LTI_TOOL_BASE_URL = os.environ.get("LTI_TOOL_BASE_URL", "")

# --- Grading ----------------------------------------------------------------------------------

# The device kind this deployment grades on by default; a worker consumes the queue of the same
# name (`celery -A config worker -Q cpu`), so a GPU node runs `-Q cuda`.
GRADING_DEVICE_KIND = os.environ.get("GRADING_DEVICE_KIND", "cpu")
GRADERS_EXERCISES_ROOT = Path(os.environ.get("GRADERS_EXERCISES_ROOT", BASE_DIR / "exercises"))
# This worker's device slot. Workers on one machine need different slots: each slot has its own
# sandbox uid (process limits count per uid), CPU core and, on a GPU node, its own GPU.
GRADERS_SLOT = env_int("GRADERS_SLOT", 0)
# Provisional points (timed twice on a busy machine) are graded again by themselves after
# 1, 5, 15 and 30 times this many seconds (courseware/submissions/provisional.py).
GRADING_PROVISIONAL_RETRY_S = env_int("GRADING_PROVISIONAL_RETRY_S", 60)
# How many submissions one student may have waiting (queued or running) at once.
SUBMISSIONS_MAX_PENDING_PER_STUDENT = env_int("SUBMISSIONS_MAX_PENDING_PER_STUDENT", 3)
# Largest request body the submission API reads; larger ones get 413 before parsing.
SUBMISSIONS_MAX_BODY_BYTES = env_int("SUBMISSIONS_MAX_BODY_BYTES", 5 * 1024 * 1024)
# A submission still queued or running after this long is put back on the queue.
SUBMISSIONS_STALE_AFTER_S = env_int("SUBMISSIONS_STALE_AFTER_S", 900)
# The worker kind (and queue) of this worker process: "cpu", or "cuda-<model>" ("cuda-h100").
GRADERS_WORKER_KIND = os.environ.get("GRADERS_WORKER_KIND", GRADING_DEVICE_KIND)
# The fleet registry (courseware/fleet): each worker beats this often; one silent for
# FLEET_GONE_AFTER_S is gone, and the submission it was grading is reclaimed.
FLEET_HEARTBEAT_S = env_int("FLEET_HEARTBEAT_S", 5)
FLEET_GONE_AFTER_S = env_int("FLEET_GONE_AFTER_S", 30)
# An idle worker sends itself a wake-up for work of its kind queued this long (a lost message).
SUBMISSIONS_WAKE_AFTER_S = env_int("SUBMISSIONS_WAKE_AFTER_S", 30)
# A submission whose grading lost its worker this many times goes to a TA, not to another one.
SUBMISSIONS_MAX_WORKERS_LOST = env_int("SUBMISSIONS_MAX_WORKERS_LOST", 2)
# Grading seconds each student's submissions may take per day (the site's TIME_ZONE day); once
# spent, new submissions are refused until midnight. 0: no limit. Staff are never limited.
GRADING_SECONDS_PER_DAY = env_int("GRADING_SECONDS_PER_DAY", 1800)
DATA_UPLOAD_MAX_MEMORY_SIZE = SUBMISSIONS_MAX_BODY_BYTES + 1024

# --- Logging ----------------------------------------------------------------------------------

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # nbgrader's gradebook brings alembic, which announces every plugin at INFO.
    "loggers": {"alembic": {"level": "WARNING"}},
}

# The beat scheduler (`celery -A config beat`, or `worker -B` on one machine) sweeps for work
# that a lost worker or broker left behind: it reclaims from workers whose heartbeat stopped
# and sends again what waited too long (courseware.fleet.recovery.sweep). Each worker's
# heartbeat thread reclaims from lost workers too, so this is the backstop; a sweep message
# older than its period is dropped rather than run late.
CELERY_BEAT_SCHEDULE = {
    "requeue-stale-submissions": {
        "task": "graders.requeue_stale",
        "schedule": 30.0,
        "options": {"queue": GRADING_DEVICE_KIND, "expires": 30},
    },
}
