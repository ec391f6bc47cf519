#!/usr/bin/env bash
# Compare the reference interpreter's outputs of two fuser-run binaries
# byte for byte (a change that must not move a bit: speed work on
# lib/interp), and the new one against itself at several thread counts.
#
#   scripts/interp-bitcheck.sh OLD_FUSER_RUN NEW_FUSER_RUN FILE.fir|DIR ...
#
# Every .fir given (or found directly in a DIR) runs with --device=cpu
# --save-outputs, once with OLD, then with NEW under FUSER_INTERP_THREADS
# = each of $THREADS (default "1 3"); the saved .npy files and the exit
# status must agree.  $TIMEOUT (default 900) seconds per run; a run of OLD
# that times out skips the file (said so), and a folder under $BASE_DIR (if
# set) named after the file is taken as OLD's outputs instead of running
# OLD.  $SKIP is a regex of file names to leave out.  Exit 1 on any
# difference.
set -uo pipefail
if [[ $# -lt 3 ]]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
OLD="$1" NEW="$2"
shift 2
THREADS="${THREADS:-1 3}"
TIMEOUT="${TIMEOUT:-900}"
SKIP="${SKIP:-^$}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
files=()
for a in "$@"; do
  if [[ -d "$a" ]]; then
    for f in "$a"/*.fir; do files+=("$f"); done
  else
    files+=("$a")
  fi
done
bad=0 same=0 skipped=0
for f in "${files[@]}"; do
  name="$(basename "$f" .fir)"
  if [[ "$name" =~ $SKIP ]]; then
    skipped=$((skipped + 1))
    continue
  fi
  ref="$WORK/old/$name"
  if [[ -n "${BASE_DIR:-}" && -d "$BASE_DIR/$name" ]]; then
    ref="$BASE_DIR/$name"
    orc=0
  else
    mkdir -p "$ref"
    timeout "$TIMEOUT" "$OLD" --device=cpu --print-values 0 --no-repro --save-outputs "$ref" "$f" > "$WORK/old.log" 2>&1
    orc=$?
    if [[ $orc -eq 124 ]]; then
      echo "skip $name (the old binary took over ${TIMEOUT}s)"
      skipped=$((skipped + 1))
      continue
    fi
  fi
  for t in $THREADS; do
    out="$WORK/new-$t/$name"
    mkdir -p "$out"
    FUSER_INTERP_THREADS=$t timeout "$TIMEOUT" "$NEW" --device=cpu --print-values 0 --no-repro --save-outputs "$out" "$f" \
      > "$WORK/new.log" 2>&1
    nrc=$?
    if [[ $nrc -ne $orc ]]; then
      echo "DIFF $name threads=$t: exit $nrc, the old binary's $orc"
      bad=$((bad + 1))
    elif ! diff -r "$ref" "$out" > /dev/null; then
      echo "DIFF $name threads=$t: outputs differ ($(diff -rq "$ref" "$out" | head -3 | tr '\n' ' '))"
      bad=$((bad + 1))
    else
      same=$((same + 1))
    fi
    rm -rf "$out"
  done
  [[ "$ref" == "$WORK/old/$name" ]] && rm -rf "$ref"
done
echo "interp-bitcheck: $same identical, $bad different, $skipped skipped"
[[ $bad -eq 0 ]]
