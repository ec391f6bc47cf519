#!/usr/bin/env bash
# Set up a machine for fuser and build it into build/.
#
#   scripts/setup.sh             install what is missing, configure, build
#   scripts/setup.sh --no-build  only install and check (CI builds with scripts/test.sh)
#
# Idempotent: Debian packages are installed only when `dpkg -s` says they are
# missing (non-interactively, with sudo when not root); the build is
# incremental.  The CUDA Toolkit is looked for in $CUDAToolkit_ROOT and
# /usr/local/cuda; without it everything that needs no GPU toolchain still
# builds and runs, and the script says what is left out.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
DO_BUILD=1
for arg in "$@"; do
  case "$arg" in
    --no-build) DO_BUILD=0 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

# ---- Debian packages ----------------------------------------------------------
# cmake, ninja and gcc build the C17 sources; python3 runs lit; llvm-19-dev is
# the LLVM C API with the NVPTX target (the backend); llvm-19-tools gives
# FileCheck, not and lit's source; clang-19 and libclang-rt-19-dev (libFuzzer
# and the sanitizer runtimes) build the fuzz harnesses (scripts/fuzz.sh).
PACKAGES=(cmake ninja-build gcc libc6-dev python3 llvm-19-dev llvm-19-tools clang-19 libclang-rt-19-dev)

installed() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }

command -v dpkg >/dev/null 2>&1 || die "dpkg not found: this script supports Debian and Ubuntu; install ${PACKAGES[*]} by hand"
missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done

if ((${#missing[@]})); then
  say "installing missing packages: ${missing[*]}"
  SUDO=()
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install: ${missing[*]}"
    SUDO=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -q
  if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    die "apt-get could not install ${missing[*]}. llvm-19 is in Debian 12 (bookworm) and Ubuntu 24.04;
         on older releases add https://apt.llvm.org first."
  fi
else
  say "packages present: ${PACKAGES[*]}"
fi

[[ -x /usr/lib/llvm-19/bin/FileCheck ]] || die "/usr/lib/llvm-19/bin/FileCheck missing (llvm-19-tools)"
[[ -f /usr/lib/llvm-19/build/utils/lit/lit.py ]] || die "lit.py missing under /usr/lib/llvm-19/build/utils/lit (llvm-19-tools)"

# ---- CUDA Toolkit ---------------------------------------------------------------
CUDA_ROOT=""
for c in "${CUDAToolkit_ROOT:-}" /usr/local/cuda; do
  if [[ -n "$c" && ( -f "$c/nvvm/libdevice/libdevice.10.bc" || -f "$c/include/cuda.h" ) ]]; then
    CUDA_ROOT="$c"
    break
  fi
done
CMAKE_ARGS=()
if [[ -n "$CUDA_ROOT" ]]; then
  say "CUDA Toolkit found at $CUDA_ROOT"
  [[ -f "$CUDA_ROOT/nvvm/libdevice/libdevice.10.bc" ]] || say "  but no nvvm/libdevice/libdevice.10.bc: math functions will need FUSER_LIBDEVICE=/path/to/libdevice.10.bc"
  [[ -x "$CUDA_ROOT/bin/ptxas" ]] || say "  but no bin/ptxas: the PTX assembly checks will be skipped"
  [[ -f "$CUDA_ROOT/include/cuda.h" ]] || say "  but no include/cuda.h: the GPU runner (fuser-run on a GPU) is left out"
  CMAKE_ARGS+=("-DCUDAToolkit_ROOT=$CUDA_ROOT")
else
  say "CUDA Toolkit NOT found (looked in \$CUDAToolkit_ROOT='${CUDAToolkit_ROOT:-}' and /usr/local/cuda)."
  say "  Without it: no libdevice, no ptxas checks, no GPU runner. The IR, the passes, the"
  say "  CPU reference interpreter and every test that needs no CUDA still build and run."
  say "  Install CUDA Toolkit 13 to /usr/local/cuda, or set CUDAToolkit_ROOT, then rerun."
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  say "GPU: $(nvidia-smi -L | head -n1)"
else
  say "no GPU found (nvidia-smi): kernels can be compiled to PTX but run only on the CPU interpreter here"
fi

# ---- configure and build -----------------------------------------------------------
if ((DO_BUILD)); then
  say "configuring $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja "${CMAKE_ARGS[@]}"
  say "building"
  ninja -C "$BUILD_DIR" -j"$(nproc)"
  say "done: tools are in $BUILD_DIR (fuser-opt, ...); run scripts/test.sh for the tests"
fi
