#!/usr/bin/env bash
# Build the libFuzzer harnesses (fuzz/, -DFUSER_FUZZ=ON with clang-19, ASan +
# UBSan) in build-fuzz/ and run each for SECONDS (default 60).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: fir kir py pipeline npy (default: all)
#
# The seed corpora and dictionaries are made from the tree each time
# (fuzz/make_corpus.py), and the regression inputs (fuzz/regressions/) are
# seeds too; what the fuzzers add is kept in
# build-fuzz/fuzz-corpus/<target>/ for the next run.  A crash, sanitizer
# report, leak, timeout (-timeout) or memory blow-up (-rss_limit_mb) fails
# the script; the input is written to build-fuzz/fuzz-artifacts/<target>/.
# One summary line per harness: executions, coverage, result.  docs/testing.md
# says how to minimize a finding and add it as a regression.
# CC (default clang-19) and BUILD_DIR (default build-fuzz) may be overridden;
# JOBS is the build's parallelism.  FUZZ_SEED (default 1) seeds libFuzzer's
# mutations.  A seed does not make runs on two machines alike: a timed run
# gets as far as the machine's speed takes it, and libFuzzer orders seed
# inputs of equal size as the file system lists them.  So before a
# submission, run longer and under several seeds (FUZZ_SEED=0 draws a new
# seed each run) than CI's bounded run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_EACH="${1:-60}"
[[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a number, got '$SECONDS_EACH'" >&2; exit 2; }
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(fir kir py pipeline npy)
BUILD_DIR="${BUILD_DIR:-$ROOT/build-fuzz}"
CC="${CC:-clang-19}"
JOBS="${JOBS:-$(nproc)}"
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "fuzz.sh: $CC not found (scripts/setup.sh installs clang-19 and libclang-rt-19-dev)" >&2
  exit 2
fi

# Per-input limits: a slow input is a finding.  The pipeline compiles
# kernels with LLVM, so it gets more time per input.
declare -A TIMEOUT=([fir]=10 [kir]=10 [py]=10 [npy]=10 [pipeline]=30)
RSS_MB=2048
MAX_LEN=65536 # FUZZ_MAX_INPUT in fuzz/fuzz.h

echo "[fuzz] configuring $BUILD_DIR (CC=$CC)"
CC="$CC" cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DFUSER_FUZZ=ON >/dev/null
echo "[fuzz] building"
ninja -C "$BUILD_DIR" -j"$JOBS" fuser-translate fuser-opt $(printf 'fuzz_%s ' "${TARGETS[@]}") >/dev/null

SEEDS="$BUILD_DIR/fuzz-seeds"
rm -rf "$SEEDS"
echo "[fuzz] making the seed corpora and dictionaries"
python3 "$ROOT/fuzz/make_corpus.py" "$SEEDS" --tools "$BUILD_DIR" --dicts "$SEEDS/dict"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=0
summary=()
for t in "${TARGETS[@]}"; do
  bin="$BUILD_DIR/fuzz/fuzz_$t"
  [[ -x "$bin" ]] || { echo "fuzz.sh: no harness '$t' ($bin)" >&2; exit 2; }
  work="$BUILD_DIR/fuzz-corpus/$t"
  arts="$BUILD_DIR/fuzz-artifacts/$t"
  log="$BUILD_DIR/fuzz-logs/$t.log"
  mkdir -p "$work" "$arts" "$(dirname "$log")"
  echo "[fuzz] $t: ${SECONDS_EACH}s (log: $log)"
  rc=0
  "$bin" -seed="${FUZZ_SEED:-1}" -max_total_time="$SECONDS_EACH" -timeout="${TIMEOUT[$t]}" -rss_limit_mb="$RSS_MB" -max_len="$MAX_LEN" \
    -dict="$SEEDS/dict/$t.dict" -artifact_prefix="$arts/" -print_final_stats=1 \
    "$work" "$SEEDS/$t" "$ROOT/fuzz/regressions/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -n1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  if ((rc == 0)); then
    result=ok
  else
    failed=1
    what=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-z -]+|runtime error: .*|property broken: .*' \
      "$log" || true)
    art=$(grep -oE "Test unit written to [^ ]+" "$log" | tail -n1 | sed 's/Test unit written to //' || true)
    result="FAILED (exit $rc${what:+: $what}${art:+; input $art})"
  fi
  summary+=("$(printf '%-9s %9s execs  cov %6s  ft %7s  corpus %6s  %s' \
    "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result")")
done
echo "[fuzz] summary (${SECONDS_EACH}s each):"
printf '  %s\n' "${summary[@]}"
if ((failed)); then
  echo "[fuzz] FAILED: see the logs; docs/testing.md says how to minimize a finding and add it to fuzz/regressions/" >&2
  exit 1
fi
