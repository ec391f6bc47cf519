#!/bin/sh
# ctest's bench.smoke: generated fusions of every shape are valid IR (they
# parse, verify and round-trip through the printer).  Not a timing.
#   smoke.sh GEN_FUSION PARSE_BENCH
set -eu
for shape in chain wide mixed; do
  "$1" --ops=3000 --shape="$shape" -o "smoke-$shape.fir"
  "$2" "smoke-$shape.fir" --runs=1
done
