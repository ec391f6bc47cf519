#!/usr/bin/env bash
# fuser: the GPU test suite.  Every fusion of test/gpu/*.fir, the seed001
# fusions (test/fusions/seed001_*.py) and the real fusions that compile
# (test/fusions/real, as real_<name>) run on the GPU with `fuser-run --check`
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
#   scripts/gpu-tests.sh --sanitizer BUILD_DIR [PRECOMPILED_DIR]
#       The same suite, each case run under compute-sanitizer once per tool:
#       memcheck (with --leak-check full), racecheck and synccheck.  A case
#       passes only if fuser-run passes and the tool reports nothing.
#       COMPUTE_SANITIZER names the binary (default: compute-sanitizer on
#       PATH, else /usr/local/cuda/bin/compute-sanitizer);
#       FUSER_SANITIZER_TOOLS picks tools (default "memcheck racecheck
#       synccheck").
#
#   scripts/gpu-tests.sh --diff-backends BUILD_DIR [PRECOMPILED_DIR]
#       Every case run with `fuser-run --check --diff-backends`: the kernels
#       compiled by both backends (llvm and nvrtc; a build with LLVM, and
#       libnvrtc here), both runs checked, and each output of one compared
#       with the other's: bit-identical, within tolerance (where a
#       math-library op feeds it), or different (a failure).  Each case's
#       line counts its outputs of each kind; a summary follows.  With a
#       precompiled folder (a GPU host without LLVM) the LLVM side is the
#       folder's PTX (`--ptx`) and NVRTC compiles the other here.
#
#   --dry-run (before or after --sanitizer): print each case's commands
#       instead of running them; needs neither a GPU nor the sanitizer.
#
# A failing case's fuser-run writes a repro folder (docs/repro.md) under
# $FUSER_REPRO_DIR (else $TMPDIR or /tmp); its path is among the lines
# printed under the FAIL line.
#
# Without PRECOMPILED_DIR, FUSER_GPU_PRECOMPILED names one; a build without
# the LLVM backend and no precompiled folder has nothing it can run: the
# suite is skipped (77), saying so.
#
# Environment: FUSER_GPU_TESTS_FILTER=REGEX runs only matching cases;
# FUSER_GPU_TESTS_SHARD=I/N only every Nth of those from the Ith (0-based),
# so that N runs side by side share the suite (sanitizer runs are slow);
# FUSER_GPU_TEST_TIMEOUT (seconds per case, default 180; 4 times that per
# tool under --sanitizer: the slowest passing case took 31 s on an H200,
# and the largest real fusion's, issue2275_repro1, 31 s with the threaded
# reference interpreter, where it ran past 520 s single-threaded).  A
# line `// gpu-tests: ARGS` in a .fir file adds
# ARGS to its fuser-run command; its --enable= and --disable= switches
# (docs/debugging.md) also go to fuser-opt when the case is precompiled
# (test/gpu/persistent_cluster.fir: --enable=clusters).
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")

usage() {
  sed -n '2,64p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

# Options may come before or after the folders.
precompile=0 sanitizer=0 dry=0 diffb=0
backend=
args=()
for a in "$@"; do
  case "$a" in
    --precompile) precompile=1 ;;
    --sanitizer) sanitizer=1 ;;
    --dry-run) dry=1 ;;
    --diff-backends) diffb=1 ;;
    --backend=*) backend=${a#--backend=} ;;
    -h|--help) usage ;;
    -*) echo "gpu-tests: unknown option '$a'" >&2; exit 2 ;;
    *) args+=("$a") ;;
  esac
done
set -- "${args[@]+"${args[@]}"}"
case "$backend" in
  ""|llvm|nvrtc) ;;
  *) echo "gpu-tests: unknown --backend '$backend' (llvm or nvrtc)" >&2; exit 2 ;;
esac
[ $# -ge 1 ] || usage
if [ $precompile = 1 ] && [ $sanitizer = 1 ]; then
  echo "gpu-tests: --precompile and --sanitizer do not go together (precompile first, then run with --sanitizer)" >&2
  exit 2
fi
if [ $diffb = 1 ] && { [ $precompile = 1 ] || [ $sanitizer = 1 ] || [ -n "$backend" ]; }; then
  echo "gpu-tests: --diff-backends compiles every case with both backends (or NVRTC beside the precompiled PTX): it goes with no --precompile, --sanitizer or --backend" >&2
  exit 2
fi
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
shard=${FUSER_GPU_TESTS_SHARD:-0/1}
shard_i=${shard%/*} shard_n=${shard#*/}
if ! [[ $shard_i =~ ^[0-9]+$ && $shard_n =~ ^[0-9]+$ ]] || [ "$shard_n" -lt 1 ] || [ "$shard_i" -ge "$shard_n" ]; then
  echo "gpu-tests: FUSER_GPU_TESTS_SHARD='$shard' is not I/N with 0 <= I < N" >&2
  exit 2
fi
timeout_s=${FUSER_GPU_TEST_TIMEOUT:-180}

# The cases: name<TAB>source file.
cases() {
  for f in "$src"/test/gpu/*.fir; do
    printf '%s\t%s\n' "$(basename "$f" .fir)" "$f"
  done
  for f in "$src"/test/fusions/seed001_*.py; do
    printf '%s\t%s\n' "$(basename "$f" .py)" "$f"
  done
  # the real-fusion corpus: the cases whose every segment compiles
  # (test/fusions/real/expected.txt, written by scripts/real-fusions.py)
  sed -n 's/^\([A-Za-z0-9_]*\): kir-\(pass\|too-large\)$/\1/p' "$src"/test/fusions/real/expected.txt 2>/dev/null |
    while read -r n; do
      printf 'real_%s\t%s\n' "$n" "$src/test/fusions/real/$n.py"
    done
}

work=$(mktemp -d "${TMPDIR:-/tmp}/fuser-gpu-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A case's .fir: the file itself, or the nvFuser script imported.
fir_of() { # name file -> path of a .fir
  case "$2" in
    *.py)
      "$translate" --from=nvfuser-py "$2" -o "$work/$1.fir" || return 1
      # real fusions without an inputs list get random data and sizes
      case "$1" in real_*) echo '// gpu-tests: --random --default-extent=256' >>"$work/$1.fir" ;; esac
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
    read -r -a switches <<<"$(extra_args "$fir" | tr ' ' '\n' | grep -E '^--(en|dis)able=' | tr '\n' ' ')"
    if "$opt" --device="$device" --pass="$pipeline" "${switches[@]}" "$fir" -o "$pre/$name.lowered.fir" 2>"$work/err" \
         </dev/null &&
       "$opt" --device="$device" --pass="$pipeline" "${switches[@]}" --emit=ptx "$fir" -o "$pre/$name.ptx" \
         2>>"$work/err" </dev/null &&
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

# The sanitizer and its tools, checked before anything runs.
tools=()
if [ $sanitizer = 1 ]; then
  read -r -a tools <<<"${FUSER_SANITIZER_TOOLS:-memcheck racecheck synccheck}"
  [ ${#tools[@]} -gt 0 ] || { echo "gpu-tests: FUSER_SANITIZER_TOOLS names no tool" >&2; exit 2; }
  for t in "${tools[@]}"; do
    case "$t" in
      memcheck|racecheck|synccheck|initcheck) ;;
      *) echo "gpu-tests: unknown compute-sanitizer tool '$t' (memcheck, racecheck, synccheck, initcheck)" >&2; exit 2 ;;
    esac
  done
  san=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
  if [ $dry = 0 ] && [ ! -x "$san" ]; then
    echo "gpu-tests: compute-sanitizer not found at '$san' (set COMPUTE_SANITIZER)" >&2
    exit 2
  fi
  timeout_s=$((timeout_s * 4))
fi


# NVRTC must load here for --backend=nvrtc: skip, saying why, where it
# cannot (a probe kernel compiled to PTX, no GPU needed).
if { [ "$backend" = nvrtc ] || [ $diffb = 1 ]; } && [ $dry = 0 ]; then
  kir=$build/fuser-kir
  [ -x "$kir" ] || { echo "gpu-tests: $kir is missing" >&2; exit 2; }
  if ! probe=$(printf 'kernel @probe ()\n    grid=[1, 1, 1] block=[1, 1, 1] smem=0 index=i32 {\n}\n' |
               "$kir" - --backend=nvrtc --emit=ptx 2>&1 >/dev/null); then
    echo "no libnvrtc: skipped ($(echo "$probe" | head -1))"
    exit 77
  fi
fi

# Nothing to run the cases with: skip, saying why.
if [ $dry = 0 ] && [ -z "$pre" ] && [ "$backend" != nvrtc ] &&
   ! { [ -x "$opt" ] && "$opt" --help 2>/dev/null | grep -q 'emit kinds in this build:.*ptx'; }; then
  echo "no PTX: skipped (this build has no LLVM backend; give a folder made by --precompile, or set FUSER_GPU_PRECOMPILED)"
  exit 77
fi

# No GPU: skip, saying why.
if [ $dry = 1 ]; then
  echo "dry run: the commands of each case, not run"
elif ! probe=$("$run" --device-info 2>&1); then
  echo "no GPU: skipped ($(echo "$probe" | head -1))"
  exit 77
else
  echo "$probe" | head -1
fi

# The sanitizer's arguments for one tool: any report is an error (exit 86),
# device memory not freed is a memcheck report.
san_args() { # tool
  local a=(--tool "$1" --error-exitcode 86 --print-limit 20)
  case "$1" in
    memcheck) a+=(--leak-check full) ;;
    racecheck) a+=(--racecheck-report all) ;;
  esac
  printf '%s\n' "${a[@]}"
}

# A sanitizer's output that reports anything, even where the exit status
# does not say so (racecheck warnings, a summary of hazards).
san_reported() { # output file
  grep '^=========' "$1" | grep -Eq '^========= (Invalid|Program hit|Race reported|Barrier error|Leaked|Uninitialized|Malformed|Error:|Warning:)|SUMMARY: [1-9]|[(, ][1-9][0-9]* (errors?|warnings?)\)'
}

# A racecheck output whose every hazard lies in cuBLASLt's own GEMM kernels
# (nvjet_*, a matmul segment's): they fill shared memory through TMA and
# mbarriers, which racecheck does not model, and it reports the producer
# warp's writes as hazards (excluding those kernels instead makes
# racecheck fail with an internal error).  Such a run is not fuser's
# finding; memcheck and synccheck still check those kernels.
san_library_only() { # output file
  local threads
  threads=$(grep -E '^=========  +(Read|Write) Thread ' "$1")
  [ -n "$threads" ] || return 1
  ! grep -Ev ' at nvjet_[A-Za-z0-9_]*\+0x[0-9a-f]+' <<<"$threads" | grep -q . || return 1
  # no report of another kind, and fuser-run itself passed
  ! grep '^=========' "$1" | grep -Eq '^========= (Invalid|Program hit|Barrier error|Leaked|Uninitialized|Malformed|Internal|Target application returned)' &&
    ! grep -v '^=========' "$1" | grep -Eq 'error:|: FAIL '
}

pass=0 fail=0 failed=""
diff_bit=0 diff_tol=0 diff_bad=0
nth=-1
while IFS=$'\t' read -r name file; do
  [ -n "$filter" ] && ! [[ $name =~ $filter ]] && continue
  nth=$((nth + 1))
  [ $((nth % shard_n)) = "$shard_i" ] || continue
  if [ -n "$pre" ]; then
    fir=$pre/$name.lowered.fir
    ptx=$pre/$name.ptx
    if [ ! -f "$fir" ] || [ ! -f "$ptx" ]; then
      echo "FAIL $name (not precompiled: $fir or $ptx is missing)"
      fail=$((fail + 1)) failed="$failed $name"
      continue
    fi
    set -- --ptx "$ptx"
    [ $diffb = 1 ] && set -- --ptx "$ptx" --diff-backends
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
    [ $diffb = 1 ] && set -- --diff-backends
  fi
  start=$(date +%s%N)
  rc=0 why=""
  : >"$work/out"
  # the plain run, or one run per sanitizer tool
  wrappers=(-)
  [ $sanitizer = 1 ] && wrappers=("${tools[@]}")
  for w in "${wrappers[@]}"; do
    pre_cmd=()
    if [ "$w" != - ]; then
      mapfile -t wa < <(san_args "$w")
      pre_cmd=("$san" "${wa[@]}")
    fi
    # shellcheck disable=SC2207
    cmd=("${pre_cmd[@]}" "$run" "$fir" "$@" --check --print-values 0 $(extra_args "$fir"))
    if [ $dry = 1 ]; then
      echo "RUN  $name: ${cmd[*]}"
      continue
    fi
    : >"$work/one"
    timeout "$timeout_s" "${cmd[@]}" >"$work/one" 2>&1 </dev/null
    r=$?
    [ "$w" != - ] && echo "--- $w" >>"$work/out"
    cat "$work/one" >>"$work/out"
    if [ "$w" = racecheck ] && { [ $r = 86 ] || { [ $r = 0 ] && san_reported "$work/one"; }; } &&
       san_library_only "$work/one"; then
      echo "NOTE $name: racecheck hazards only in cuBLASLt's nvjet kernels, not judged (see san_library_only)"
      r=0
    elif [ "$w" != - ] && [ $r = 0 ] && san_reported "$work/one"; then
      r=86
    fi
    if [ $r != 0 ] && [ $rc = 0 ]; then
      rc=$r
      [ "$w" != - ] && why=" under $w"
    fi
  done
  [ $dry = 1 ] && continue
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ $diffb = 1 ]; then
    nb=$(grep -c '^  diff .*: bit-identical' "$work/out")
    nt=$(grep -c '^  diff .*: within tolerance' "$work/out")
    nd=$(grep -c '^  diff .*: DIFFERENT' "$work/out")
    diff_bit=$((diff_bit + nb)) diff_tol=$((diff_tol + nt)) diff_bad=$((diff_bad + nd))
    kinds=" ($nb bit-identical, $nt within tolerance, $nd different)"
  else
    kinds=""
  fi
  if [ $rc = 0 ]; then
    echo "PASS $name (${ms} ms)$kinds"
    pass=$((pass + 1))
  else
    if [ $rc = 124 ]; then
      echo "FAIL $name (timed out after ${timeout_s}s$why)"
    elif [ $rc = 86 ]; then
      echo "FAIL $name (compute-sanitizer reported$why)"
    else
      echo "FAIL $name (exit $rc$why)$kinds"
    fi
    grep -E 'FAIL|DIFFERENT|error|note|repro of|^========= |^--- ' "$work/out" | head -25 | sed 's/^/     /'
    fail=$((fail + 1)) failed="$failed $name"
  fi
done < <(cases)
[ $dry = 1 ] && exit 0

echo "gpu-tests${backend:+ (--backend=$backend)}: $pass passed, $fail failed"
[ $diffb = 1 ] && echo "diff-backends (llvm vs nvrtc): $diff_bit outputs bit-identical, $diff_tol within tolerance, $diff_bad different"
[ $fail = 0 ] || { echo "failed:$failed"; exit 1; }
exit 0
