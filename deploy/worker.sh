#!/usr/bin/env bash
# One grading worker. It consumes the queue named for its device kind (cpu or cuda).
# GPU nodes run one job per device at a time in a solo pool: the process never forks after CUDA
# has started. Run one worker per GPU with CUDA_VISIBLE_DEVICES set, e.g. via the systemd unit.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${GRADING_DEVICE_KIND:-cpu}"
# One sandbox slot per worker on this machine (its own uid; on a GPU node, its own GPU).
export GRADERS_SLOT="${GRADERS_SLOT:-${CUDA_VISIBLE_DEVICES:-0}}"
pool=(--pool prefork --concurrency 1)
[ "$kind" = "cuda" ] && pool=(--pool solo)
exec .venv/bin/celery -A config worker -Q "$kind" "${pool[@]}" \
  --hostname "${kind}-${CUDA_VISIBLE_DEVICES:-0}@%h" --loglevel INFO
