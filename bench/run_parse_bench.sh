#!/usr/bin/env bash
# The parse benchmark: generate fusions of 100,000 ops (chain, wide, mixed)
# and time parse + verify + print of each (median of 7 runs, file I/O not
# timed).  Target: under 1 second each.  Results go in docs/performance.md.
#
#   bench/run_parse_bench.sh [OPS] [RUNS]      (defaults: 100000 7)
#   BUILD_DIR=build-release bench/run_parse_bench.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
OPS="${1:-100000}"
RUNS="${2:-7}"
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja >/dev/null
fi
ninja -C "$BUILD_DIR" gen_fusion parse_bench >/dev/null
grep -E '^CMAKE_BUILD_TYPE|^FUSER_SANITIZE' "$BUILD_DIR/CMakeCache.txt" | sed 's/^/# /'
for shape in chain wide mixed; do
  f="$BUILD_DIR/bench/bench-$OPS-$shape.fir"
  "$BUILD_DIR/bench/gen_fusion" --ops="$OPS" --shape="$shape" -o "$f"
  "$BUILD_DIR/bench/parse_bench" "$f" --runs="$RUNS"
done
