#!/usr/bin/env bash
# The web process: install, migrate, load content, collect static files, serve with gunicorn.
#
#   deploy/web.sh          everything, then serve (one machine, the compose file)
#   deploy/web.sh setup    everything but serving, then exit (a Kubernetes init container)
#   deploy/web.sh serve    only serve (replicas whose setup ran before them)
#
# Run behind a reverse proxy that serves static/ (deploy/nginx/courseware.conf.template).
#   BIND=127.0.0.1:8000  WEB_WORKERS=4   where and how many gunicorn workers
#   WEB_CPUS=0-6         serve only on these cores (taskset -c): on a machine that also runs CPU
#                        grading workers, leave out their timing cores (docs/DEPLOY.md)
#   SKIP_INSTALL=1       the images set it: they ran `make install` when they were built
#   DRY_RUN=1            print each command instead of running it
set -euo pipefail
cd "$(dirname "$0")/.."

step="${1:-all}"
case "$step" in
  all | setup | serve) ;;
  *)
    echo "usage: deploy/web.sh [setup|serve]" >&2
    exit 2
    ;;
esac

run() {
  if [ "${DRY_RUN:-0}" = 1 ]; then
    printf '%q ' "$@"
    echo
  else
    "$@"
  fi
}

if [ "$step" != serve ]; then
  # Builds the venv and the vendored front-end files (CodeMirror) that collectstatic gathers.
  [ "${SKIP_INSTALL:-0}" = 1 ] || run make --no-print-directory install
  run .venv/bin/python manage.py migrate --noinput
  run .venv/bin/python manage.py sync_content
  run .venv/bin/python manage.py collectstatic --noinput
fi
[ "$step" != setup ] || exit 0
# gunicorn trusts X-Forwarded-Proto only from FORWARDED_ALLOW_IPS (default: this machine), which
# is how Django behind a TLS-terminating proxy sees https (secure cookies, CSRF origin checks).
serve=(.venv/bin/gunicorn config.wsgi:application --bind "${BIND:-127.0.0.1:8000}"
  --workers "${WEB_WORKERS:-4}" --access-logfile -)
if [ -n "${WEB_CPUS:-}" ]; then
  serve=(taskset -c "$WEB_CPUS" "${serve[@]}")
fi
if [ "${DRY_RUN:-0}" = 1 ]; then
  run "${serve[@]}"
  exit 0
fi
exec "${serve[@]}"
