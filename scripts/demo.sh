#!/usr/bin/env bash
# The main job on a seed fusion, start to finish:
#   1. set up and build (scripts/setup.sh),
#   2. import test/fusions/seed001_gelu_bookend.py with fuser-translate,
#   3. run the pass pipeline with fuser-opt (IR after each pass on stderr),
#   4. run it: on the GPU when nvidia-smi finds one and fuser-run was built
#      with the CUDA driver runtime, otherwise on the CPU reference
#      interpreter (fuser-run --device=cpu).
# Outputs go to build/demo/.  SKIP_SETUP=1 skips step 1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
SEED="$ROOT/test/fusions/seed001_gelu_bookend.py"
OUT="$BUILD_DIR/demo"

step() { printf '\n==> %s\n' "$*"; }

if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
  step "setting up and building (scripts/setup.sh)"
  "$ROOT/scripts/setup.sh"
fi

need() {
  if [[ ! -x "$BUILD_DIR/$1" ]]; then
    echo "demo: $BUILD_DIR/$1 was not built; $2" >&2
    exit 1
  fi
}
need fuser-translate "the nvFuser importer (tools/fuser-translate.c) is required"
need fuser-opt "the pass driver (tools/fuser-opt.c) is required"
need fuser-run "the runner (tools/fuser-run.c) is not part of this checkout yet"
mkdir -p "$OUT"

step "importing $(basename "$SEED")"
echo "\$ fuser-translate --from=nvfuser-py $SEED -o $OUT/seed001.fir"
"$BUILD_DIR/fuser-translate" --from=nvfuser-py "$SEED" -o "$OUT/seed001.fir"
cat "$OUT/seed001.fir"

step "running the pass pipeline"
echo "\$ fuser-opt $OUT/seed001.fir --pass=all --print-ir-after-all --timing -o $OUT/seed001.opt.fir"
"$BUILD_DIR/fuser-opt" "$OUT/seed001.fir" --pass=all --print-ir-after-all --timing -o "$OUT/seed001.opt.fir"
echo
echo "final IR ($OUT/seed001.opt.fir):"
cat "$OUT/seed001.opt.fir"

step "running it"
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
cuda_runner=0
if grep -q 'FUSER_HAS_CUDA_DRIVER=1' "$BUILD_DIR/compile_commands.json" 2>/dev/null; then cuda_runner=1; fi
if ((gpu && cuda_runner)); then
  echo "GPU: $(nvidia-smi -L | head -n1)"
  echo "\$ fuser-run $OUT/seed001.opt.fir --check --bench"
  "$BUILD_DIR/fuser-run" "$OUT/seed001.opt.fir" --check --bench
else
  if ((gpu)); then
    echo "a GPU is present, but fuser-run was built without the CUDA driver runtime (no cuda.h/libcuda"
    echo "at configure time): running the CPU reference interpreter"
  else
    echo "no GPU found: running the CPU reference interpreter"
  fi
  echo "\$ fuser-run $OUT/seed001.opt.fir --device=cpu"
  "$BUILD_DIR/fuser-run" "$OUT/seed001.opt.fir" --device=cpu
fi
