#!/usr/bin/env bash
# The scheduler: exactly one per site. It sweeps for submissions a lost worker left behind.
#   BEAT_SCHEDULE  where beat keeps its schedule state (default /var/lib/courseware/...)
#   DRY_RUN=1      print the command instead of running it
set -euo pipefail
cd "$(dirname "$0")/.."
command=(.venv/bin/celery -A config beat --loglevel "${LOGLEVEL:-INFO}"
  --schedule "${BEAT_SCHEDULE:-/var/lib/courseware/celerybeat-schedule}")
if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%q ' "${command[@]}"
  echo
  exit 0
fi
exec "${command[@]}"
