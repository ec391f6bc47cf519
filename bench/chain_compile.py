#!/usr/bin/env python3
"""Compile time of long op chains, text to PTX: how it grows with the op count.

  python3 bench/chain_compile.py [--build build] [--ops 1000,5000,20000]
                                 [--op sin] [--until PASS] [--timeout 300]
                                 [--runs 1]

For each N a fusion `%T1 = OP %T0 ... %TN = OP %T(N-1)` on f32[1024, 1024] is
written to a temporary .fir and compiled once with
`BUILD/fuser-opt CHAIN.fir --pass=all --emit=ptx --timing=json` (with --until
the pipeline stops after that pass and nothing is emitted).  Prints one
Markdown row per N: wall seconds, CPU seconds (user + system of the
fuser-opt process, from getrusage: the number to compare on a shared
machine, where wall time mostly measures the other processes), the slowest
phases, the PTX size.  With --runs R each N is compiled R times and the
medians are printed.  A run that fails or passes --timeout is reported as
such, not hidden.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

PASSES = ["strip-bookend-views", "canonicalize", "segment", "schedule", "index-graph", "lower"]


def chain(n, op):
    lines = ["fusion @chain%d {" % n, "  %T0 = input f32[1024, 1024]"]
    for i in range(n):
        lines.append("  %%T%d = %s %%T%d" % (i + 1, op, i))
    lines += ["  output %%T%d" % n, "}", ""]
    return "\n".join(lines)


def run_once(cmd, timeout):
    """One compile: (wall s, CPU s of the child, CompletedProcess or None on timeout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return timeout, 0.0, None
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--ops", default="1000,5000,20000")
    p.add_argument("--op", default="sin")
    p.add_argument("--until", choices=PASSES, help="run the passes up to this one and emit nothing")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--runs", type=int, default=1, help="compiles per N; medians are printed")
    a = p.parse_args()
    opt = os.path.join(a.build, "fuser-opt")
    print("| ops | wall s | CPU s | slowest phases (ms) | PTX bytes |")
    print("|---|---|---|---|---|")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in a.ops.split(",")]:
            fir = os.path.join(tmp, "chain%d.fir" % n)
            ptx = os.path.join(tmp, "chain%d.ptx" % n)
            with open(fir, "w") as f:
                f.write(chain(n, a.op))
            pipeline = ",".join(PASSES[: PASSES.index(a.until) + 1]) if a.until else "all"
            cmd = [opt, fir, "--pass=" + pipeline, "--timing=json", "-o", ptx]
            if not a.until:
                cmd.append("--emit=ptx")
            walls, cpus, r = [], [], None
            for _ in range(a.runs):
                wall, cpu, r = run_once(cmd, a.timeout)
                if r is None or r.returncode != 0:
                    break
                walls.append(wall)
                cpus.append(cpu)
            if r is None:
                print("| %d | > %.0f (timeout) | | | |" % (n, a.timeout))
                failed = True
                continue
            if r.returncode != 0:
                print("| %d | %.2f (exit %d: %s) | | | |" % (n, wall, r.returncode, r.stderr.strip().splitlines()[-1:]))
                failed = True
                continue
            phases = []
            try:
                start = r.stderr.index("{")
                phases = json.JSONDecoder().raw_decode(r.stderr[start:])[0]["phases"]
            except (ValueError, KeyError):
                pass
            top = sorted(phases, key=lambda q: -q["ms"])[:3]
            size = os.path.getsize(ptx) if not a.until else 0
            print("| %d | %.2f | %.2f | %s | %s |" % (n, statistics.median(walls), statistics.median(cpus),
                                                   ", ".join("%s %.0f" % (q["name"], q["ms"]) for q in top),
                                                   size if not a.until else "-"))
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
