#!/bin/bash
# The error of the f32 fast exp (lib/target/llvm/fast_math.c; the cuda
# target's fu_exp writes the same instructions) over every f32 input whose
# exp is a normal f32, [-87.33, 88.72], measured on the GPU against exp in
# f64: the largest error in ulps of the f32 result, and where.  CUDA's own
# expf (what --disable=fast_paths gives, libdevice's) is measured beside
# it.  Results below 2^-126 flush to 0 (ex2.approx.ftz); the sweep says
# how many inputs that is.
#
#   bench/accuracy/fast_exp_ulps.sh BUILD     (needs nvcc and a GPU)
#
# The fu_exp text is taken from what BUILD's fuser-kir emits, so the sweep
# measures the function the compiler writes, not a copy of it.
set -euo pipefail
build=${1:?usage: fast_exp_ulps.sh BUILD}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/fuser-kir" "$root/lit/backend/ops_f32.kir" --emit=cuda -o "$work/ops.cu"
awk '/^__device__ __forceinline__ float fu_exp\(float x\) \{/{on=1} on{print} on&&/^\}/{exit}' "$work/ops.cu" > "$work/fu_exp.inc"
grep -q "ex2.approx" "$work/fu_exp.inc" || { echo "fast_exp_ulps: no fu_exp in fuser-kir's output" >&2; exit 1; }
cat "$work/fu_exp.inc" "$here/fast_exp_ulps.cu" > "$work/sweep.cu"
"$nvcc" -O3 -arch=native --fmad=false -o "$work/sweep" "$work/sweep.cu"
"$work/sweep"
