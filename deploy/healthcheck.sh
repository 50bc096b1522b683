#!/usr/bin/env bash
# Health checks that the compose file and the Kubernetes probes run inside the containers.
#
#   deploy/healthcheck.sh web      the login page answers 200 on $BIND's port (default 8000)
#   deploy/healthcheck.sh worker   this container's worker (same environment as deploy/worker.sh):
#                                  a prefork worker answers a Celery ping by its own name
#   deploy/healthcheck.sh beat     the scheduler process runs
#   deploy/healthcheck.sh flower   Flower answers its /healthcheck on $FLOWER_PORT (default 5555)
#
# A worker in the solo pool (the default on GPUs) answers no ping while it grades, for up to the
# task time limit (CELERY_TASK_TIME_LIMIT, 660 s), so its check only asks that its process runs;
# the fleet page's heartbeats show a worker that runs but is stuck.
set -euo pipefail
cd "$(dirname "$0")/.."

# Whether a process whose command line contains $1 runs here (no pgrep in the slim images).
running() {
  local cmdline args
  for cmdline in /proc/[0-9]*/cmdline; do
    # Compared in bash itself: a grep for the pattern would find its own command line.
    args="$(tr '\0' ' ' <"$cmdline" 2>/dev/null)" || continue
    [[ "$args" != *"$1"* ]] || return 0
  done
  return 1
}

case "${1:-}" in
  web)
    port="${BIND:-127.0.0.1:8000}"
    port="${port##*:}"
    # Host: localhost, which DJANGO_ALLOWED_HOSTS must list (deploy/env.example does).
    exec .venv/bin/python - "$port" <<'PY'
import sys
import urllib.request

request = urllib.request.Request(
    f"http://127.0.0.1:{sys.argv[1]}/login/", headers={"Host": "localhost"}
)
with urllib.request.urlopen(request, timeout=10) as response:
    sys.exit(0 if response.status == 200 else 1)
PY
    ;;
  worker)
    line="$(DRY_RUN=1 deploy/worker.sh)"
    name="$(grep -o -- '--hostname [^ ]*' <<<"$line" | cut -d' ' -f2)"
    name="${name%@*}"
    if grep -q -- '--pool solo' <<<"$line"; then
      running "--hostname ${name}@"
      exit
    fi
    exec .venv/bin/celery -A config inspect ping --destination "${name}@$(hostname)" \
      --timeout "${PING_TIMEOUT:-10}" >/dev/null
    ;;
  beat)
    running "celery -A config beat"
    ;;
  flower)
    exec .venv/bin/python - "${FLOWER_PORT:-5555}" <<'PY'
import sys
import urllib.request

url = f"http://127.0.0.1:{sys.argv[1]}/healthcheck"
with urllib.request.urlopen(url, timeout=10) as response:
    sys.exit(0 if response.read().strip() == b"OK" else 1)
PY
    ;;
  *)
    echo "usage: deploy/healthcheck.sh web|worker|beat|flower" >&2
    exit 2
    ;;
esac
