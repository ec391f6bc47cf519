#!/usr/bin/env python3
"""Compile time of the seed fusions, text to PTX, one fresh process each.

  python3 bench/compile_time.py [--rounds 11] [--seeds DIR] [--callgrind]
                                LABEL=BUILD_DIR[:VAR=VALUE...][:+ARG...] ...

For each seed (DIR/*.py, default test/fusions) the fusion is first
translated to .fir with the first build's fuser-translate (a DIR with .fir
files is read as those alone, as they are: `--seeds bench/persistent`
times the normalization benchmarks); then every round
runs `BUILD_DIR/fuser-opt SEED.fir --pass=all --emit=ptx -o OUT.ptx` once
per build, one build after the other, so builds compared in one call see
the same machine (this machine's speed drifts by 1.5x over minutes: compare
ratios from one call, not absolute times across calls).  Wall time is
measured around the process (`subprocess.run`); the empty process
(`/bin/true`) is measured the same way and printed.  Prints a Markdown table
of medians (ms) per seed and build, the PTX of each build's last run is
compared byte for byte with the first build's, and with --callgrind the
whole process's instruction count (valgrind --tool=callgrind, stable under
load) is added per seed and build.  `:VAR=VALUE` after a build sets an
environment variable for its runs (the same build twice, with and without a
setting, compares the setting); `:+ARG` adds ARG to its fuser-opt command
(`nvrtc=build:+--backend=nvrtc` times the nvrtc backend, whose PTX is not
expected to match llvm's).

Exit status 1 when a compile fails.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--seeds", default=os.path.join(os.path.dirname(here), "test", "fusions"))
    p.add_argument("--callgrind", action="store_true", help="also count instructions with valgrind")
    p.add_argument("builds", nargs="+", metavar="LABEL=BUILD_DIR[:VAR=VALUE...][:+ARG...]")
    a = p.parse_args()
    builds = []
    for b in a.builds:
        label, sep, rest = b.partition("=")
        if not sep:
            p.error(f"'{b}': expected LABEL=BUILD_DIR")
        path, *settings = rest.split(":")
        env = dict(os.environ)
        extra = []
        for kv in settings:
            if kv.startswith("+"):
                extra.append(kv[1:])
                continue
            k, eq, v = kv.partition("=")
            if not eq:
                p.error(f"'{kv}' in '{b}': expected VAR=VALUE")
            env[k] = v
        opt = os.path.join(path, "fuser-opt")
        if not os.access(opt, os.X_OK):
            p.error(f"{opt} is not an executable (build it first)")
        builds.append((label, opt, env, extra))
    a.builds = builds
    return a


def wall_ms(cmd, env=None):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    t1 = time.perf_counter()
    return (t1 - t0) * 1e3, r


def instructions(cmd, env):
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    for line in r.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split()[-1])
    return None


def main():
    a = parse_args()
    names = os.listdir(a.seeds)
    ext = ".fir" if any(f.endswith(".fir") for f in names) else ".py"
    seeds = sorted(f[: -len(ext)] for f in names if f.endswith(ext))
    translate = os.path.join(os.path.dirname(a.builds[0][1]), "fuser-translate")
    work = tempfile.mkdtemp(prefix="fuser-compile-time.")
    try:
        firs = {}
        for s in seeds:
            given = os.path.join(a.seeds, s + ".fir")
            if os.path.exists(given):
                firs[s] = given
                continue
            fir = os.path.join(work, s + ".fir")
            subprocess.run([translate, "--from=nvfuser-py", os.path.join(a.seeds, s + ".py"), "-o", fir], check=True)
            firs[s] = fir
        empty = statistics.median(wall_ms(["/bin/true"])[0] for _ in range(a.rounds))
        times = {(s, label): [] for s in seeds for label, _, _, _ in a.builds}
        # Seeds with a segment whose kind has no kernels yet cannot be emitted.
        no_kernel = []
        for s in seeds:
            _, r = wall_ms([a.builds[0][1], firs[s], "--pass=all", "--emit=ptx", "-o", os.devnull])
            if r.returncode != 0 and b"has no kernel" in r.stderr:
                no_kernel.append(s)
        seeds = [s for s in seeds if s not in no_kernel]
        for s in seeds:
            for _ in range(a.rounds):
                for label, opt, env, extra in a.builds:
                    out = os.path.join(work, f"{s}.{label}.ptx")
                    ms, r = wall_ms([opt, firs[s], "--pass=all", "--emit=ptx", "-o", out] + extra, env)
                    if r.returncode != 0:
                        sys.stderr.write(f"compile_time: {label} failed on {s}:\n{r.stderr.decode()}")
                        return 1
                    times[(s, label)].append(ms)
        counts = {}
        if a.callgrind:
            if not shutil.which("valgrind"):
                sys.stderr.write("compile_time: --callgrind needs valgrind\n")
                return 1
            for s in seeds:
                for label, opt, env, extra in a.builds:
                    out = os.path.join(work, f"{s}.{label}.cg.ptx")
                    counts[(s, label)] = instructions([opt, firs[s], "--pass=all", "--emit=ptx", "-o", out] + extra, env)
        labels = [label for label, _, _, _ in a.builds]
        print(f"Process wall time, ms, median of {a.rounds} (builds interleaved; /bin/true: {empty:.1f} ms)\n")
        print("| seed | " + " | ".join(labels) + (" | " + " | ".join(f"{l} M instr" for l in labels) if counts else "") +
              " | PTX same as " + labels[0] + " |")
        print("|---" * (1 + len(labels) * (2 if counts else 1) + 1) + "|")
        for s in seeds:
            cells = [f"{statistics.median(times[(s, l)]):.1f}" for l in labels]
            if counts:
                cells += [f"{counts[(s, l)] / 1e6:.1f}" if counts[(s, l)] else "?" for l in labels]
            ref = open(os.path.join(work, f"{s}.{labels[0]}.ptx"), "rb").read()
            same = all(open(os.path.join(work, f"{s}.{l}.ptx"), "rb").read() == ref for l in labels[1:])
            print(f"| {s} | " + " | ".join(cells) + f" | {'yes' if same else 'no'} |")
        if no_kernel:
            print(f"\nNo kernel to emit (no pointwise segment): {', '.join(no_kernel)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
