#!/usr/bin/env bash
# Flower, Celery's own monitor, for operators who know Celery: workers, queues, tasks. The
# instructors' fleet page (/instructor/fleet/) needs none of it.
#   FLOWER_BASIC_AUTH=user:password   required: Flower can revoke and terminate tasks. Flower reads
#                                     it from the environment, so it never shows in `ps`.
#   FLOWER_ADDRESS=127.0.0.1  FLOWER_PORT=5555
#   DRY_RUN=1                         print the command instead of running it
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${FLOWER_BASIC_AUTH:-}" ]; then
  echo "deploy/flower.sh: set FLOWER_BASIC_AUTH=user:password (Flower can revoke and terminate" \
    "tasks, so it never runs open)" >&2
  exit 2
fi
command=(.venv/bin/celery -A config flower "--address=${FLOWER_ADDRESS:-127.0.0.1}"
  "--port=${FLOWER_PORT:-5555}")
if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%q ' "${command[@]}"
  echo
  exit 0
fi
exec "${command[@]}"
