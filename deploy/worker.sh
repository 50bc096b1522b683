#!/usr/bin/env bash
# One grading worker for ONE device: a GPU, or one CPU grading slot (the contract of issue 14).
#
#   WORKER_KIND  cpu, or cuda-<model> in lower case (cuda-h100, cuda-a100, cuda-h200); it is also
#                the Celery queue the worker consumes. `cuda` alone asks nvidia-smi for the model
#                of GPU $GPU (e.g. "NVIDIA H100 80GB HBM3" -> cuda-h100).
#   SLOT         this worker's slot on this machine: it picks the sandbox uid and the timing core,
#                so two workers on one machine (GPU or CPU ones) must have different slots.
#   GPU          the GPU for a cuda-* kind: its index as nvidia-smi numbers it (CUDA_DEVICE_ORDER
#                is set to PCI_BUS_ID so that CUDA agrees), or its GPU-/MIG- UUID. Default: the
#                GPU whose UUID NVIDIA_VISIBLE_DEVICES names (Kubernetes' device plugin puts the
#                pod's GPU there), else SLOT. GPU=visible: the one GPU NVIDIA_VISIBLE_DEVICES
#                names (UUID or index), or refuse to start.
#   WORKER       "<kind>-<slot>" in one word (the systemd instance: courseware-worker@cuda-h100-0);
#                WORKER_KIND and SLOT, when set, win over it.
#   POOL         Celery pool: solo for cuda-* kinds (the process that started CUDA never forks),
#                prefork for cpu. Either way one job at a time.
#   DRY_RUN=1    print the environment and command instead of running them.
#
# `deploy/worker.sh calibrate [--refresh]` measures this worker's device instead, with the same
# environment (python -m graders calibrate): run it on a new node before its workers start.
#
# It runs, with GRADERS_WORKER_KIND, GRADERS_SLOT and CUDA_VISIBLE_DEVICES exported:
#   celery -A config worker -Q <kind> --concurrency 1 --prefetch-multiplier 1 \
#     --hostname <kind>-<slot>@%h [arguments given to this script]
#
# Older names still work: GRADING_DEVICE_KIND for WORKER_KIND, GRADERS_SLOT for SLOT, and
# CUDA_VISIBLE_DEVICES for GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "deploy/worker.sh: $*" >&2
  exit 2
}

# The model part of a kind from the GPU's marketing name: the first word shaped like a GPU model
# (H100, A100, H200, L40S, T4), "NVIDIA A100-SXM4-80GB" -> a100.
model_of() {
  local word
  for word in $(tr 'A-Z-' 'a-z ' <<<"$1"); do
    if [[ "$word" =~ ^[a-z]{1,3}[0-9]{1,4}[a-z]?$ ]]; then
      echo "$word"
      return 0
    fi
  done
  return 1
}

instance="${WORKER:-}"
instance_kind="" instance_slot=""
if [ -n "$instance" ]; then
  [[ "$instance" =~ ^(.+)-([0-9]+)$ ]] ||
    die "WORKER=$instance is not <kind>-<slot> (e.g. cuda-h100-0 or cpu-2)"
  instance_kind="${BASH_REMATCH[1]}" instance_slot="${BASH_REMATCH[2]}"
fi

kind="${WORKER_KIND:-${instance_kind:-${GRADING_DEVICE_KIND:-cpu}}}"
gpu_given="${GPU:-}"
slot="${SLOT:-${instance_slot:-${GRADERS_SLOT:-}}}"

case "$kind" in
  cpu)
    [ -z "$gpu_given" ] || die "GPU=$gpu_given is set but WORKER_KIND=cpu: a cpu worker grades on \
the CPU; use WORKER_KIND=cuda-<model> for a GPU worker"
    slot="${slot:-0}"
    # Hide every GPU: a CPU grading must not start CUDA on a device that another worker times.
    gpu=""
    ;;
  cuda | cuda-*)
    visible=""
    [[ ! "${NVIDIA_VISIBLE_DEVICES:-}" =~ ^([0-9]+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+)$ ]] ||
      visible="$NVIDIA_VISIBLE_DEVICES"
    if [ "$gpu_given" = visible ]; then
      # A privileged container sees every GPU of its node: only this name says which is ours.
      [ -n "$visible" ] || die "GPU=visible, but NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES:-} \
names no one GPU (the NVIDIA device plugin's envvar strategy puts the pod's GPU there)"
      gpu_given="$visible"
    fi
    # Unasked, only a UUID: an index there would mean another GPU inside an unprivileged container.
    [[ "$visible" =~ ^[0-9]+$ ]] && visible=""
    gpu="${gpu_given:-${CUDA_VISIBLE_DEVICES:-${visible}}}"
    gpu="${gpu:-${slot:-0}}"
    slot="${slot:-$gpu}"
    [[ "$gpu" =~ ^([0-9]+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+)$ ]] ||
      die "GPU=$gpu must name one GPU (an index such as 0, or a GPU-/MIG- UUID): one worker per device"
    if [ "$kind" = cuda ]; then
      command -v nvidia-smi >/dev/null ||
        die "WORKER_KIND=cuda needs nvidia-smi to find the GPU's model; set WORKER_KIND=cuda-<model> (e.g. cuda-h100)"
      name="$(nvidia-smi --query-gpu=name --format=csv,noheader --id="$gpu" | head -n1)" ||
        die "nvidia-smi found no GPU $gpu"
      model="$(model_of "$name")" ||
        die "cannot tell the model of GPU $gpu ($name); set WORKER_KIND=cuda-<model>"
      kind="cuda-$model"
    fi
    ;;
  *) die "WORKER_KIND=$kind is not a worker kind: use cpu or cuda-<model> (e.g. cuda-h100)" ;;
esac
[[ "$kind" =~ ^(cpu|cuda-[a-z0-9]+)$ ]] ||
  die "WORKER_KIND=$kind is not a worker kind: cpu or cuda-<model>, lower case, letters and digits"
[[ "$slot" =~ ^[0-9]+$ ]] || die "SLOT=$slot must be a whole number (0, 1, ...)"

pool="${POOL:-}"
if [ -z "$pool" ]; then
  pool=prefork
  [ "$kind" = cpu ] || pool=solo
fi
[[ "$pool" =~ ^(prefork|solo)$ ]] || die "POOL=$pool: use prefork or solo"

export GRADERS_WORKER_KIND="$kind" GRADERS_SLOT="$slot" CUDA_VISIBLE_DEVICES="$gpu"
export CUDA_DEVICE_ORDER=PCI_BUS_ID
if [ "${1:-}" = calibrate ]; then
  shift
  device=cpu
  [ "$kind" = cpu ] || device=cuda
  command=(.venv/bin/python -m graders calibrate --device "$device" "$@")
else
  command=(
    .venv/bin/celery -A config worker -Q "$kind" --concurrency 1 --prefetch-multiplier 1
    --hostname "${kind}-${slot}@%h" --pool "$pool" --loglevel "${LOGLEVEL:-INFO}" "$@"
  )
fi
if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%s ' "GRADERS_WORKER_KIND=$(printf %q "$kind")" "GRADERS_SLOT=$(printf %q "$slot")" \
    "CUDA_VISIBLE_DEVICES=$(printf %q "$gpu")" "CUDA_DEVICE_ORDER=PCI_BUS_ID"
  printf '%q ' "${command[@]}"
  echo
  exit 0
fi
exec "${command[@]}"
