#!/usr/bin/env bash
# Checks the dependency rule of docs/contributing.md ("Layout") on a build:
# every call or data reference from one source area to a symbol defined in
# another must go down the table below.  It reads the object files with nm,
# so it sees real references, not #include lines.
#
#   scripts/check-layering.sh BUILD_DIR
#
# Exit 0 when every reference is allowed; 1 with one line per offending
# reference (file -> file : symbol) otherwise; 2 when the build holds no
# object files.
set -euo pipefail

BUILD_DIR="${1:?usage: check-layering.sh BUILD_DIR}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# area: the areas it may use (besides itself).  Keep in step with the table
# in docs/contributing.md.
ALLOWED='
lib/support:
lib/ir: lib/support
lib/analysis: lib/support lib/ir
lib/text: lib/support lib/ir lib/analysis
lib/interp: lib/support lib/ir lib/analysis
lib/frontend: lib/support lib/ir lib/analysis lib/text
lib/target/llvm: lib/support lib/ir lib/analysis
lib/target/cuda: lib/support lib/ir lib/analysis
lib/runtime: lib/support lib/ir lib/analysis lib/interp
passes: lib/support lib/ir lib/analysis lib/text lib/interp
lib/driver: lib/support lib/ir lib/analysis lib/text lib/interp lib/frontend lib/target/llvm lib/target/cuda lib/runtime passes
'

mapfile -t objects < <(find "$BUILD_DIR/CMakeFiles" -path '*/fuser_*.dir/*' -name '*.c.o' 2>/dev/null | sort)
if [[ ${#objects[@]} -eq 0 ]]; then
  echo "check-layering: no object files of the fuser libraries under $BUILD_DIR (build first)" >&2
  exit 2
fi

for o in "${objects[@]}"; do
  src="${o#*.dir/}"
  src="${src%.c.o}"
  # An object left from a source file that was moved or deleted is stale.
  [[ -f "$ROOT/$src.c" ]] || continue
  nm "$o" | awk -v s="$src" '
    NF == 3 && $2 ~ /^[TDRBC]$/ { print "DEF", s, $3 }
    $1 == "U" { print "USE", s, $2 }'
done | awk -v allowed="$ALLOWED" '
  function area(path,   n, x) {
    n = split(path, x, "/")
    if (x[1] == "lib" && x[2] == "target") return "lib/target/" x[3]
    if (x[1] == "lib") return "lib/" x[2]
    return x[1]
  }
  BEGIN {
    n = split(allowed, lines, "\n")
    for (i = 1; i <= n; i++) {
      if (lines[i] == "") continue
      m = split(lines[i], w, /[: ]+/)
      known[w[1]] = 1
      for (j = 2; j <= m; j++) if (w[j] != "") ok[w[1], w[j]] = 1
    }
  }
  $1 == "DEF" { def[$3] = $2; next }
  $1 == "USE" { use_file[++nu] = $2; use_sym[nu] = $3 }
  END {
    bad = 0
    for (i = 1; i <= nu; i++) {
      if (!(use_sym[i] in def)) continue
      from = area(use_file[i]); to = area(def[use_sym[i]])
      if (from == to) continue
      if (!(from in known)) { print "check-layering: " use_file[i] ": area " from " is not in the rule table"; bad = 1; continue }
      if (!((from, to) in ok)) {
        print "check-layering: " use_file[i] ".c -> " def[use_sym[i]] ".c : " use_sym[i] " (" from " may not use " to ")"
        bad = 1
      }
    }
    if (!bad) print "check-layering: every reference between areas follows the rule"
    exit bad
  }'
