#!/usr/bin/env bash
# fuser: GPU benchmark of seed001's erf-GELU on f32[8192, 3072], with the
# bookend views (test/fusions/seed001_gelu_bookend.py) and without them (the
# same GELU written on f32[8192, 3072] directly).  The views are host
# aliases, so both should give the same single kernel and the same time.
#
#   bench/gpu_bench.sh BUILD_DIR [PRECOMPILED_DIR] [-- FUSER_RUN_ARGS...]
#       Run on the GPU: fuser-run --bench --check --json on each case (with
#       PRECOMPILED_DIR: from its lowered .fir and PTX, for a GPU host
#       without LLVM), then bench/torch_compare.py for PyTorch eager and
#       torch.compile on the same fusion and sizes when PyTorch is there.
#       Prints a Markdown section for docs/performance.md; the raw JSON goes
#       to $FUSER_BENCH_OUT (default: a temporary folder, removed).
#
#   bench/gpu_bench.sh --precompile BUILD_DIR OUT_DIR
#       On a machine with LLVM: write OUT_DIR/<case>.lowered.fir and
#       OUT_DIR/<case>.ptx (fuser-opt --pass=all) for both cases.
#
# Environment: FUSER_BENCH_ITERS (default 200), FUSER_BENCH_WARMUP (20);
# FUSER_GPU_DEVICE, the target of --precompile (fuser-opt --device=, h100).
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

precompile=0
if [ "${1:-}" = "--precompile" ]; then
  precompile=1
  shift
fi
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
build=$(cd "$1" 2>/dev/null && pwd) || { echo "gpu_bench: no build directory '$1'" >&2; exit 2; }
shift
pre=""
if [ $# -ge 1 ] && [ "$1" != "--" ]; then
  pre=$1
  shift
fi
[ "${1:-}" = "--" ] && shift
iters=${FUSER_BENCH_ITERS:-200}
warmup=${FUSER_BENCH_WARMUP:-20}

if [ -n "${FUSER_BENCH_OUT:-}" ]; then
  out=$FUSER_BENCH_OUT
  mkdir -p "$out" || exit 2
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/fuser-gpu-bench.XXXXXX")
  trap 'rm -rf "$out"' EXIT
fi

# The two cases as .fir files.
"$build/fuser-translate" --from=nvfuser-py "$src/test/fusions/seed001_gelu_bookend.py" -o "$out/gelu_bookend.fir" ||
  exit 1
cat >"$out/gelu_noviews.fir" <<'EOF'
// seed001's GELU without the bookend views: the same math on f32[8192, 3072].
fusion @gelu_noviews {
  %T0 = input f32[8192, 3072] {example=randn}
  %T3 = mul %T0, 0.5
  %T5 = mul %T0, 0.707107
  %T6 = erf %T5
  %T8 = add %T6, 1.0
  %T9 = mul %T3, %T8
  output %T9
}
EOF

if [ $precompile = 1 ]; then
  [ -n "$pre" ] || { echo "gpu_bench: --precompile needs an output directory" >&2; exit 2; }
  mkdir -p "$pre" || exit 2
  for c in gelu_bookend gelu_noviews; do
    "$build/fuser-opt" --device="${FUSER_GPU_DEVICE:-h100}" --pass=all "$out/$c.fir" -o "$pre/$c.lowered.fir" &&
      "$build/fuser-opt" --device="${FUSER_GPU_DEVICE:-h100}" --pass=all --emit=ptx "$out/$c.fir" -o "$pre/$c.ptx" ||
      exit 1
    echo "precompiled $c into $pre"
  done
  exit 0
fi

if ! probe=$("$build/fuser-run" --device-info 2>&1); then
  echo "no GPU: skipped ($(echo "$probe" | head -1))"
  exit 77
fi

extra=("$@")
status=0
for c in gelu_bookend gelu_noviews; do
  if [ -n "$pre" ]; then
    input=("$pre/$c.lowered.fir" --ptx "$pre/$c.ptx")
  else
    input=("$out/$c.fir")
  fi
  if ! "$build/fuser-run" "${input[@]}" "${extra[@]}" --bench --check --iters "$iters" --warmup "$warmup" --json \
      --print-values 0 >"$out/$c.json" 2>"$out/$c.err" </dev/null; then
    status=1
    if grep -q '"check_pass": false' "$out/$c.json"; then
      echo "gpu_bench: WARNING: $c ran, but its results differ from the interpreter's (check FAIL)" >&2
    else
      echo "gpu_bench: fuser-run failed on $c:" >&2
      cat "$out/$c.err" >&2
      exit 1
    fi
  fi
done

# fuser's own table, always.
python3 - "$out" <<'EOF'
import json, sys, os
out = sys.argv[1]
print("### fuser-run --bench (seed001 GELU f32[8192, 3072])\n")
first = True
for c in ("gelu_bookend", "gelu_noviews"):
    with open(os.path.join(out, c + ".json")) as f:
        d = json.load(f)
    fz = d["fusions"][0]
    b = fz["bench"]
    if first:
        print(f"- GPU: {fz['gpu']}; copy bandwidth {b['copy_gbs']:.0f} GB/s (cuMemcpyDtoD of "
              f"{b['copy_bytes'] / 2**20:.0f} MiB, read + write); median of {b['iters']} runs after "
              f"{b['warmup']} warm-up; L2 flushed with {b['l2_flush_bytes'] / 2**20:.0f} MiB written before each run\n")
        print("| case | kernels | grid x block | median us | min us | GB/s | % of copy | check |")
        print("|---|---|---|---|---|---|---|---|")
        first = False
    launches = "; ".join(f"{l['grid'][0]}x{l['block'][0]}" for l in fz["launches"])
    t = b["total"]
    print(f"| {c} | {len(b['kernels'])} | {launches} | {t['median_us']:.1f} | {t['min_us']:.1f} | {t['gbs']:.0f} "
          f"| {t['pct_copy']:.1f}% | {'PASS' if fz.get('check_pass') else 'FAIL'} |")
print()
EOF

if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  python3 "$here/torch_compare.py" --iters "$iters" --warmup "$warmup" \
    --fuser-json "$out/gelu_bookend.json" --fuser-json "$out/gelu_noviews.json" --json "$out/torch.json"
else
  echo "(PyTorch with CUDA not found: no eager / torch.compile comparison)"
fi
exit $status
