#!/usr/bin/env bash
# fuser: every kernel of the test suite's fusions, compiled from its CUDA C
# without a GPU.  The cases are test/gpu/*.fir and the seed fusions
# test/fusions/*.py (imported with fuser-translate); each goes through the
# whole pipeline (fuser-opt --pass=all --device=h100) to --emit=cuda.
#
#   scripts/cuda-c-check.sh BUILD_DIR [nvcc|nvrtc]
#
#   nvcc  (default) compiles each case's CUDA C with `nvcc -ptx -arch=sm_90
#         --fmad=false`, warnings as errors.  Skipped (exit 77, saying why)
#         where nvcc is not found ($NVCC, $CUDAToolkit_ROOT/bin/nvcc,
#         /usr/local/cuda/bin/nvcc, or PATH).
#   nvrtc compiles each case with fuser's NVRTC backend (fuser-opt
#         --backend=nvrtc --emit=ptx: libnvrtc loaded at run time, no GPU
#         needed) and assembles the PTX with `ptxas -arch=sm_90`.  Skipped
#         (77) where libnvrtc cannot be loaded or ptxas is not found.
#
# Prints ok/FAIL per case and a summary; exit 1 on any failure.  A case whose
# segments have no kernel yet (a scheduler that comes later) is listed as
# `none` with the pipeline's reason and counted apart.
# FUSER_CUDA_CHECK_FILTER=REGEX runs only matching cases.
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
[ $# -ge 1 ] || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || { echo "cuda-c-check: no build directory '$1'" >&2; exit 2; }
mode=${2:-nvcc}
opt=$build/fuser-opt
translate=$build/fuser-translate
for t in "$opt" "$translate"; do
  [ -x "$t" ] || { echo "cuda-c-check: $t is missing (build it first)" >&2; exit 2; }
done
filter=${FUSER_CUDA_CHECK_FILTER:-}
cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}

find_tool() { # name -> path, or nothing
  local v
  for v in "$cuda_root/bin/$1" "/usr/local/cuda/bin/$1"; do
    [ -x "$v" ] && { echo "$v"; return; }
  done
  command -v "$1" 2>/dev/null
}

case "$mode" in
  nvcc)
    nvcc=${NVCC:-$(find_tool nvcc)}
    if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
      echo "no nvcc: skipped (set NVCC or CUDAToolkit_ROOT to check the CUDA C of the test kernels)"
      exit 77
    fi
    echo "cuda-c-check: $("$nvcc" --version | tail -2 | head -1)" ;;
  nvrtc)
    # In a sanitizer build: libnvrtc's dynamic TLS crashes LeakSanitizer's
    # scan at exit (its tracer takes a SIGSEGV), so the processes that load
    # it run without leak checks; ASan's other checks stay, and the leak
    # checks of fuser's own code run in every other test.
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    ptxas=$(find_tool ptxas)
    if [ -z "$ptxas" ]; then
      echo "no ptxas: skipped (the PTX NVRTC makes is checked with ptxas)"
      exit 77
    fi ;;
  *) echo "cuda-c-check: unknown mode '$mode' (nvcc or nvrtc)" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/fuser-cuda-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

cases() {
  for f in "$src"/test/gpu/*.fir "$src"/test/fusions/*.py; do
    [ -f "$f" ] && echo "$f"
  done
}

ok=0 bad=0 none=0 kernels=0
# fuser-opt failed on $1: a case without kernels (listed), or a failure.
no_kernel() {
  grep -q "error: nothing to emit: no segment has a kernel" "$work/err" || return 1
  echo "none $1 (no kernel yet)"
  grep "has no kernel" "$work/err" | sed 's/^.*warning: /     /' | head -5
  none=$((none + 1))
}
while read -r file; do
  name=$(basename "$file")
  name=${name%.*}
  [ -n "$filter" ] && ! [[ $name =~ $filter ]] && continue
  fir=$file
  case "$file" in
    *.py)
      fir=$work/$name.fir
      "$translate" --from=nvfuser-py "$file" -o "$fir" 2>"$work/err" || {
        echo "FAIL $name (fuser-translate)"; sed 's/^/     /' "$work/err" | head -10; bad=$((bad + 1)); continue; } ;;
  esac
  if [ "$mode" = nvcc ]; then
    if ! "$opt" --device=h100 --pass=all --emit=cuda "$fir" -o "$work/$name.cu" 2>"$work/err" </dev/null; then
      no_kernel "$name" && continue
      echo "FAIL $name (--emit=cuda)"; sed 's/^/     /' "$work/err" | head -10; bad=$((bad + 1)); continue
    fi
    # 550 (a variable set but never used): a persistent kernel's shared
    # slots whose combined value no output reads; the emitter leaves out
    # the unused loads, and both backends drop the stores
    if ! "$nvcc" -ptx -arch=sm_90 --fmad=false -Werror all-warnings -diag-suppress 550 "$work/$name.cu" -o "$work/$name.ptx" \
        >"$work/err" 2>&1; then
      echo "FAIL $name (nvcc)"; sed 's/^/     /' "$work/err" | head -20; bad=$((bad + 1)); continue
    fi
  else
    if ! "$opt" --device=h100 --pass=all --backend=nvrtc --emit=ptx "$fir" -o "$work/$name.ptx" 2>"$work/err" \
        </dev/null; then
      if grep -q "libnvrtc.*could not be loaded" "$work/err"; then
        echo "no libnvrtc: skipped ($(head -1 "$work/err"))"
        exit 77
      fi
      no_kernel "$name" && continue
      echo "FAIL $name (--backend=nvrtc --emit=ptx)"; sed 's/^/     /' "$work/err" | head -20; bad=$((bad + 1)); continue
    fi
    if ! "$ptxas" -arch=sm_90 "$work/$name.ptx" -o "$work/$name.cubin" >"$work/err" 2>&1; then
      echo "FAIL $name (ptxas)"; sed 's/^/     /' "$work/err" | head -20; bad=$((bad + 1)); continue
    fi
  fi
  n=$(grep -c '^\.visible \.entry' "$work/$name.ptx")
  kernels=$((kernels + n))
  echo "ok   $name ($n kernel$([ "$n" = 1 ] || echo s))"
  ok=$((ok + 1))
done < <(cases)

echo "cuda-c-check ($mode): $ok case(s) with $kernels kernel(s) compiled, $none without kernels, $bad failed"
[ $bad = 0 ] || exit 1
[ $ok -gt 0 ] || { echo "cuda-c-check: no case ran"; exit 1; }
exit 0
