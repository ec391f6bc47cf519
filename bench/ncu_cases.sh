#!/usr/bin/env bash
# fuser: Nsight Compute on precompiled bench cases, one profiled launch per
# kernel, to explain where a kernel stands against the copy roofline (DRAM
# throughput, occupancy, registers, warp stall reasons, bytes in flight).
#
#   bench/ncu_cases.sh BUILD PRECOMPILED_DIR OUT CASE...
#
# CASE names PRECOMPILED_DIR/CASE.lowered.fir and CASE.ptx (kernel_bench.py
# precompile).  Each report goes to OUT/ncu-CASE.txt; a short digest of every
# case (the lines most often needed) is printed.  Clocks are left alone
# (--clock-control none), as the timing runs leave them.
set -u
[ $# -ge 4 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
build=$1 dir=$2 out=$3
shift 3
mkdir -p "$out" || exit 2
ncu_bin=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
status=0
for c in "$@"; do
  report="$out/ncu-$c.txt"
  "$ncu_bin" --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    "$build/fuser-run" "$dir/$c.lowered.fir" --ptx "$dir/$c.ptx" --print-values 0 >"$report" 2>&1 || status=1
  echo "== $c"
  grep -E "^  [a-zA-Z_0-9]+.*\(|DRAM Throughput|Memory Throughput|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Stall|Eligible Warps|Dynamic Shared|Static Shared" "$report" |
    grep -v "^    ----" | head -40
done
exit $status
