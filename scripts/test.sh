#!/usr/bin/env bash
# Build with warnings as errors and run every test (C unit tests and lit).
#
#   scripts/test.sh              build/       -DFUSER_WERROR=ON
#   scripts/test.sh --sanitize   build-asan/  -DFUSER_WERROR=ON -DFUSER_SANITIZE=ON (ASan + UBSan)
#
# Extra arguments after the mode go to ctest (e.g. -R canonicalize, -L gpu).
# JOBS overrides the parallelism (default: nproc); BUILD_DIR the build
# folder (--sanitize appends -asan to it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
CMAKE_ARGS=(-DFUSER_WERROR=ON)
if [[ "${1:-}" == "--sanitize" ]]; then
  shift
  BUILD_DIR="$BUILD_DIR-asan"
  CMAKE_ARGS+=(-DFUSER_SANITIZE=ON)
  # Leaks are errors; UB stops the test with a stack trace.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
fi
if [[ -n "${CUDAToolkit_ROOT:-}" ]]; then
  CMAKE_ARGS+=("-DCUDAToolkit_ROOT=$CUDAToolkit_ROOT")
fi
JOBS="${JOBS:-$(nproc)}"

echo "[test] configuring $BUILD_DIR (${CMAKE_ARGS[*]})"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja "${CMAKE_ARGS[@]}"
echo "[test] building"
ninja -C "$BUILD_DIR" -j"$JOBS"
echo "[test] running ctest"
cd "$BUILD_DIR"
ctest --output-on-failure -j"$JOBS" "$@"
