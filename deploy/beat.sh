#!/usr/bin/env bash
# The scheduler: one per site. It sweeps for submissions a lost worker left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/celery -A config beat --loglevel INFO --schedule "${BEAT_SCHEDULE:-/var/lib/courseware/celerybeat-schedule}"
