#!/usr/bin/env bash
# The web process: migrate, load content, serve. Run behind a reverse proxy that serves static/.
set -euo pipefail
cd "$(dirname "$0")/.."
# Builds the venv and the vendored front-end files (CodeMirror) that collectstatic gathers.
make --no-print-directory install
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py sync_content
.venv/bin/python manage.py collectstatic --noinput
exec .venv/bin/gunicorn config.wsgi:application --bind "${BIND:-127.0.0.1:8000}" --workers "${WEB_WORKERS:-4}"
