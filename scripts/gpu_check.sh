#!/usr/bin/env bash
# GPU smoke check for the grading engine, for a machine with an NVIDIA GPU.
#
#   scripts/gpu_check.sh [--quick]
#
# 1. shows the GPU and whether torch sees it;
# 2. calibrates the peaks (triad + fp32 matmul) and compares them with the datasheet;
# 3. grades every vector-add sample on cuda and checks verdicts against expected.toml;
# 4. grades fast.py once more with reference/naive companions and prints the figures;
# 5. (not with --quick) validates every exercise on cuda with full timing: reference, naive
#    and samples, with their scores and measures;
# 6. runs the hostile corpus (tests/hostile) on cuda.
# Exit status is non-zero when anything disagrees. Writes everything under $OUT (or
# ./gpu-check-out) so the results can be copied back.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
export GRADERS_CACHE_DIR="$OUT/cache"
status=0

echo "== device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())" \
  | tee "$OUT/torch.txt" || status=1

echo "== calibrate"
"$PY" -m graders calibrate --device cuda --refresh --json | tee "$OUT/peaks.json" || status=1

echo "== samples on cuda"
"$PY" - "$OUT" <<'PYEOF' || status=1
import json, sys, time, tomllib
from pathlib import Path
from graders import grade, load_exercise

out = Path(sys.argv[1])
folder = Path("exercises/ch15/vector-add")
spec = load_exercise(folder)
expected = tomllib.loads((folder / "samples" / "expected.toml").read_text())
quick = "--quick" in sys.argv
failures = 0
for name, want in sorted(expected.items()):
    if quick and name == "hanging":
        continue
    began = time.monotonic()
    report = grade(spec, (folder / "samples" / f"{name}.py").read_text(), "cuda",
                   compare=False, profile=False)
    ok = report["verdict"] == want["verdict"] and want["score"][0] <= report["score"] <= want["score"][1]
    failures += not ok
    perf = report.get("performance") or {}
    print(f"{name:14} {report['verdict']:9} score {report['score']:5} "
          f"{'ok' if ok else 'MISMATCH'}  {time.monotonic() - began:5.1f}s  "
          f"{perf.get('achieved_gbps') or 0:8.1f} GB/s  {report.get('message') or ''}"[:220])
    (out / f"report-{name}.json").write_text(json.dumps(report, indent=2))
report = grade(spec, (folder / "samples" / "fast.py").read_text(), "cuda")
(out / "report-fast-compare.json").write_text(json.dumps(report, indent=2))
perf = report["performance"] or {}
print("with companions:", report["verdict"], {k: perf.get(k) for k in (
    "median_s", "cv", "runs", "achieved_gbps", "fraction_of_peak", "relative_to_reference",
    "speedup_vs_naive")}, report["flags"])
sys.exit(1 if failures else 0)
PYEOF
if [ "${1:-}" != "--quick" ]; then
  # Every chapter exercise: reference and naive graded on cuda with full timing; the validator
  # prints one line per gradable (verdict, score, measure) and checks the score ranges.
  echo "== every exercise's reference and naive version on cuda"
  "$PY" -m graders validate exercises --device cuda --perf --no-cache --json \
    > "$OUT/validate-cuda.json" 2> >(tee "$OUT/validate-cuda.txt" >&2) || status=1
fi

# The hostile corpus on CUDA: every attack class graded on the device, with an honest grading
# after each, the same assertions as on the CPU (verdict, points, message, no grader failure).
# On CUDA the output is copied into the arena inside the window and device work must be done
# before "done"; this is where a deferred-kernel attack would show.
echo "== hostile corpus on cuda"
GRADERS_HOSTILE_DEVICE=cuda "$PY" -m pytest -q -p no:cacheprovider tests/hostile \
  --junitxml="$OUT/hostile-cuda.xml" 2>&1 | tee "$OUT/hostile-cuda.txt" | tail -30 || status=1

echo "== done (status $status); outputs in $OUT"
exit $status
