#!/usr/bin/env bash
# fuser: the GPU test suite.  Every fusion of test/gpu/*.fir and the seed001
# fusions (test/fusions/seed001_*.py) run on the GPU with `fuser-run --check`
# (outputs compared with the CPU interpreter); PASS or FAIL per case, a
# summary, exit 1 on any failure, 77 (skipped) when there is no GPU.
#
#   scripts/gpu-tests.sh BUILD_DIR [PRECOMPILED_DIR] [--backend=nvrtc]
#       Run the suite with BUILD_DIR/fuser-run.  With PRECOMPILED_DIR (made
#       by --precompile), each case runs from its lowered .fir and PTX: what
#       a GPU host without LLVM needs.  Without it, fuser-run compiles each
#       case itself (a build with the LLVM backend).
#       --backend=nvrtc: every case's kernels are compiled on this host from
#       their CUDA C by NVRTC (fuser-run --backend=nvrtc: libnvrtc, no LLVM
#       needed); with PRECOMPILED_DIR, from the lowered .fir, after checking
#       that its CUDA C is the <case>.cu --precompile wrote.  Skipped (77)
#       where libnvrtc cannot be loaded.
#
#   scripts/gpu-tests.sh --precompile BUILD_DIR OUT_DIR
#       On a machine with LLVM (no GPU needed): write OUT_DIR/<case>.lowered.fir,
#       OUT_DIR/<case>.ptx and OUT_DIR/<case>.cu (the CUDA C of the same
#       kernels) for every case, with fuser-opt --pass=all.
#       FUSER_GPU_PIPELINE overrides the pipeline (default: all),
#       FUSER_GPU_DEVICE the target (fuser-opt --device=, default h100).
#
# Without PRECOMPILED_DIR, FUSER_GPU_PRECOMPILED names one; a build without
# the LLVM backend and no precompiled folder has nothing it can run: the
# suite is skipped (77), saying so.
#
# Environment: FUSER_GPU_TESTS_FILTER=REGEX runs only matching cases;
# FUSER_GPU_TEST_TIMEOUT (seconds per case, default 600).  A line
# `// gpu-tests: ARGS` in a .fir file adds ARGS to its fuser-run command.
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")

usage() {
  sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

precompile=0
backend=
args=()
for a in "$@"; do
  case "$a" in
    --precompile) precompile=1 ;;
    --backend=*) backend=${a#--backend=} ;;
    *) args+=("$a") ;;
  esac
done
set -- "${args[@]+"${args[@]}"}"
case "$backend" in
  ""|llvm|nvrtc) ;;
  *) echo "gpu-tests: unknown --backend '$backend' (llvm or nvrtc)" >&2; exit 2 ;;
esac
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
build=$(cd "$1" 2>/dev/null && pwd) || { echo "gpu-tests: no build directory '$1'" >&2; exit 2; }
pre=${2:-${FUSER_GPU_PRECOMPILED:-}}
if [ $precompile = 1 ] && [ -z "$pre" ]; then
  echo "gpu-tests: --precompile needs an output directory" >&2
  exit 2
fi

run=$build/fuser-run
opt=$build/fuser-opt
translate=$build/fuser-translate
for t in "$run" "$translate"; do
  [ -x "$t" ] || { echo "gpu-tests: $t is missing (build it first: ninja -C $build)" >&2; exit 2; }
done
filter=${FUSER_GPU_TESTS_FILTER:-}
timeout_s=${FUSER_GPU_TEST_TIMEOUT:-600}

# The cases: name<TAB>source file.
cases() {
  for f in "$src"/test/gpu/*.fir; do
    printf '%s\t%s\n' "$(basename "$f" .fir)" "$f"
  done
  for f in "$src"/test/fusions/seed001_*.py; do
    printf '%s\t%s\n' "$(basename "$f" .py)" "$f"
  done
}

work=$(mktemp -d "${TMPDIR:-/tmp}/fuser-gpu-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A case's .fir: the file itself, or the nvFuser script imported.
fir_of() { # name file -> path of a .fir
  case "$2" in
    *.py)
      "$translate" --from=nvfuser-py "$2" -o "$work/$1.fir" || return 1
      echo "$work/$1.fir" ;;
    *) echo "$2" ;;
  esac
}

extra_args() { # .fir -> the `// gpu-tests:` arguments
  sed -n 's|^// gpu-tests:||p' "$1" 2>/dev/null | tr '\n' ' '
}

if [ $precompile = 1 ]; then
  [ -x "$opt" ] || { echo "gpu-tests: $opt is missing" >&2; exit 2; }
  mkdir -p "$pre" || exit 2
  pipeline=${FUSER_GPU_PIPELINE:-all}
  device=${FUSER_GPU_DEVICE:-h100}
  ok=0 bad=0
  while IFS=$'\t' read -r name file; do
    [ -n "$filter" ] && ! [[ $name =~ $filter ]] && continue
    fir=$(fir_of "$name" "$file") || { echo "FAIL $name (fuser-translate)"; bad=$((bad + 1)); continue; }
    if "$opt" --device="$device" --pass="$pipeline" "$fir" -o "$pre/$name.lowered.fir" 2>"$work/err" </dev/null &&
       "$opt" --device="$device" --pass="$pipeline" --emit=ptx "$fir" -o "$pre/$name.ptx" 2>>"$work/err" </dev/null &&
       "$opt" "$pre/$name.lowered.fir" --emit=cuda -o "$pre/$name.cu" 2>>"$work/err" </dev/null; then
      # the `// gpu-tests:` arguments travel with the lowered file
      args=$(extra_args "$fir")
      [ -n "$args" ] && printf '// gpu-tests:%s\n' "$args" >>"$pre/$name.lowered.fir"
      echo "ok   $name"
      ok=$((ok + 1))
    else
      echo "FAIL $name (does not compile)"
      sed 's/^/     /' "$work/err" | head -20
      rm -f "$pre/$name.lowered.fir" "$pre/$name.ptx" "$pre/$name.cu"
      bad=$((bad + 1))
    fi
  done < <(cases)
  echo "precompiled $ok case(s) into $pre; $bad failed"
  [ $bad = 0 ] || exit 1
  exit 0
fi

# NVRTC must load here for --backend=nvrtc: skip, saying why, where it
# cannot (a probe kernel compiled to PTX, no GPU needed).
if [ "$backend" = nvrtc ]; then
  kir=$build/fuser-kir
  [ -x "$kir" ] || { echo "gpu-tests: $kir is missing" >&2; exit 2; }
  if ! probe=$(printf 'kernel @probe ()\n    grid=[1, 1, 1] block=[1, 1, 1] smem=0 index=i32 {\n}\n' |
               "$kir" - --backend=nvrtc --emit=ptx 2>&1 >/dev/null); then
    echo "no libnvrtc: skipped ($(echo "$probe" | head -1))"
    exit 77
  fi
fi

# Nothing to run the cases with: skip, saying why.
if [ -z "$pre" ] && [ "$backend" != nvrtc ] &&
   ! { [ -x "$opt" ] && "$opt" --help 2>/dev/null | grep -q 'emit kinds in this build:.*ptx'; }; then
  echo "no PTX: skipped (this build has no LLVM backend; give a folder made by --precompile, or set FUSER_GPU_PRECOMPILED)"
  exit 77
fi

# No GPU: skip, saying why.
if ! probe=$("$run" --device-info 2>&1); then
  echo "no GPU: skipped ($(echo "$probe" | head -1))"
  exit 77
fi
echo "$probe" | head -1

pass=0 fail=0 failed=""
while IFS=$'\t' read -r name file; do
  [ -n "$filter" ] && ! [[ $name =~ $filter ]] && continue
  if [ -n "$pre" ]; then
    fir=$pre/$name.lowered.fir
    ptx=$pre/$name.ptx
    if [ ! -f "$fir" ] || [ ! -f "$ptx" ]; then
      echo "FAIL $name (not precompiled: $fir or $ptx is missing)"
      fail=$((fail + 1)) failed="$failed $name"
      continue
    fi
    set -- --ptx "$ptx"
    if [ "$backend" = nvrtc ]; then
      # this host writes the same CUDA C from the lowered kernels, and NVRTC
      # compiles it
      if ! "$opt" "$fir" --emit=cuda -o "$work/$name.cu" 2>"$work/err" </dev/null ||
         ! cmp -s "$work/$name.cu" "$pre/$name.cu"; then
        echo "FAIL $name (the CUDA C of $fir differs from $pre/$name.cu, or is missing: precompiled by another fuser?)"
        fail=$((fail + 1)) failed="$failed $name"
        continue
      fi
      set -- --backend=nvrtc
    fi
  else
    fir=$(fir_of "$name" "$file") || { echo "FAIL $name (fuser-translate)"; fail=$((fail + 1)) failed="$failed $name"; continue; }
    set --
    [ -n "$backend" ] && set -- --backend="$backend"
  fi
  start=$(date +%s%N)
  # With --ptx, fuser-run takes one fusion at a time: a file of several
  # fusions runs once per fusion, and fails if any of them does.
  fusions="-"
  if [ -n "$pre" ] && [ "$backend" != nvrtc ] && [ "$(grep -c '^fusion @' "$fir")" -gt 1 ]; then
    fusions=$(sed -n 's/^fusion @\([A-Za-z0-9_.]*\).*/\1/p' "$fir")
  fi
  rc=0
  : >"$work/out"
  for fu in $fusions; do
    sel=()
    [ "$fu" = - ] || sel=(--fusion="@$fu")
    # shellcheck disable=SC2046
    timeout "$timeout_s" "$run" "$fir" "$@" "${sel[@]}" --check --print-values 0 $(extra_args "$fir") \
      >>"$work/out" 2>&1 </dev/null
    r=$?
    [ $r = 0 ] || { [ $rc = 0 ] && rc=$r; }
  done
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ $rc = 0 ]; then
    echo "PASS $name (${ms} ms)"
    pass=$((pass + 1))
  else
    [ $rc = 124 ] && echo "FAIL $name (timed out after ${timeout_s}s)" || echo "FAIL $name (exit $rc)"
    grep -E 'FAIL|error|note' "$work/out" | head -25 | sed 's/^/     /'
    fail=$((fail + 1)) failed="$failed $name"
  fi
done < <(cases)

echo "gpu-tests${backend:+ (--backend=$backend)}: $pass passed, $fail failed"
[ $fail = 0 ] || { echo "failed:$failed"; exit 1; }
exit 0
