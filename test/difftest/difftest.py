#!/usr/bin/env python3
"""fuser difftest: random fusions through the whole pipeline, checked against
the reference interpreter.

    difftest.py BUILD [--start S] [--count N] [--jobs J] [--out DIR]
        For each seed S..S+N-1: gen_fusion.py writes the fusion, `fuser-opt
        --pass=all` compiles it, and `fuser-run --device=kir --check` runs the
        lowered kernels on the CPU against the interpreter.

    difftest.py BUILD --precompile DIR [--start S] [--count N]
        On a machine with LLVM: write DIR/<seed>.lowered.fir and DIR/<seed>.ptx
        (fuser-opt --pass=all, and --emit=ptx) for every seed that has
        kernels, for a GPU host without LLVM.

    difftest.py BUILD --precompiled DIR
        On the GPU host: `fuser-run --check --ptx` every case of DIR.

    --batch N (with --precompile) compiles N seeds' fusions as one file:
    DIR/batch-<first seed>.lowered.fir and one PTX module with all their
    kernels (named after their fusions).  --precompiled then runs a batch in
    one fuser-run process: one CUDA context and one JIT for N fusions, some
    twenty times the throughput of a process per case.  A fusion whose
    verdict the batch's log does not give cleanly (a check that is not PASS,
    an error, a crash that stopped the batch) runs again alone
    (--fusion=@NAME), and that run is its verdict.  --gpu-backend=nvrtc runs
    the same lowered files through the NVRTC backend instead of the PTX.

Each case ends in one of:
  pass       every output matched the interpreter;
  no kernel  a segment's kind has no kernel yet (persistent, resize): not a pass;
  FAIL       anything else: the generated fusion does not verify, a pass or the
             printer fails, fuser-run crashes, times out or finds a mismatch.
For each FAIL the driver names the seed and the stage, and writes
DIR/seed-<S>.fir (the generated fusion, the reproducer) with the commands
that reproduce it in its first lines.  Exit status 1 if any case failed.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import shutil
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fusion  # noqa: E402

NO_KERNEL = re.compile(r"has no kernel after the pipeline|cannot be compiled yet|has no kernel: it is not in the output")


def run(cmd, timeout):
    """Run cmd; (status, combined output).  A timeout is status 'timeout'."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return "timeout", ""


def describe(rc):
    if rc == "timeout":
        return "timed out"
    if isinstance(rc, int) and rc < 0:
        return "killed by signal %d" % -rc
    return "exit %s" % rc


class Case:
    def __init__(self, seed, status, stage="", detail=""):
        self.seed, self.status, self.stage, self.detail = seed, status, stage, detail


def kir_check(a, text, work, stem, seed=-1):
    """A fusion's text through fuser-opt --pass=all and fuser-run --device=kir --check."""
    src = os.path.join(work, stem + ".fir")
    low = os.path.join(work, stem + ".lowered.fir")
    with open(src, "w") as f:
        f.write(text)
    try:
        rc, out = run([a.opt, "--pass=all", src, "-o", low], a.timeout)
        if rc != 0:
            return Case(seed, "fail", "fuser-opt --pass=all (%s)" % describe(rc), out)
        rc, out = run([a.run, "--device=kir", "--check", "--print-values", "0"] + a.run_args + [low], a.timeout)
        if rc == 0:
            return Case(seed, "pass")
        if rc == 1 and NO_KERNEL.search(out):
            return Case(seed, "nokernel")
        return Case(seed, "fail", "fuser-run --device=kir --check (%s)" % describe(rc), out)
    finally:
        for p in (src, low):
            if os.path.exists(p):
                os.remove(p)


def kir_case(a, seed, work):
    """One seed on the CPU kernel path."""
    return kir_check(a, gen_fusion.generate(seed)[0], work, "seed-%d" % seed, seed)


def precompile_case(a, seed, work):
    """One seed compiled to a lowered .fir and PTX in a.precompile."""
    text, _ = gen_fusion.generate(seed)
    src = os.path.join(work, "seed-%d.fir" % seed)
    with open(src, "w") as f:
        f.write(text)
    low = os.path.join(a.precompile, "seed-%d.lowered.fir" % seed)
    ptx = os.path.join(a.precompile, "seed-%d.ptx" % seed)
    try:
        rc, out = run([a.opt, "--device=" + a.gpu_device, "--pass=all", src, "-o", low], a.timeout)
        if rc != 0:
            return Case(seed, "fail", "fuser-opt --pass=all (%s)" % describe(rc), out)
        rc, out = run([a.opt, "--device=" + a.gpu_device, "--pass=all", "--emit=ptx", src, "-o", ptx], a.timeout)
        if rc == 0 and not NO_KERNEL.search(out) and a.ptxas:
            rc, out = run([a.ptxas, "-arch=" + a.ptxas_arch, ptx, "-o", os.devnull], a.timeout)
            if rc != 0:
                return Case(seed, "fail", "ptxas (%s)" % describe(rc), out)
        if rc == 0 and not NO_KERNEL.search(out):
            return Case(seed, "pass")
        for p in (low, ptx):
            if os.path.exists(p):
                os.remove(p)
        # a segment whose kind has no kernel yet is named in a warning;
        # nothing to emit without one: every output is a host view
        if NO_KERNEL.search(out):
            return Case(seed, "nokernel")
        if rc == 1 and "nothing to emit" in out:
            return Case(seed, "host")
        return Case(seed, "fail", "fuser-opt --emit=ptx (%s)" % describe(rc), out)
    finally:
        os.remove(src)


def gpu_command(a, ptx):
    """fuser-run --check on the GPU with the carried PTX, or compiled there
    by a.gpu_backend; the lowered file comes last."""
    src = ["--ptx", ptx] if a.gpu_backend == "llvm" else ["--backend=" + a.gpu_backend]
    return [a.run, "--check", "--print-values", "0"] + src + a.run_args


def gpu_verdict(seed, rc, out, stage):
    """A GPU run's case: pass (host if no kernel ran), no kernel, or FAIL."""
    if rc == 0:
        return Case(seed, "host" if re.search(r", 0 kernels\)$", out, re.M) else "pass")
    if rc == 1 and NO_KERNEL.search(out):
        return Case(seed, "nokernel")
    return Case(seed, "fail", "%s (%s)" % (stage, describe(rc)), out)


def gpu_stage(a, alone=False):
    backend = "" if a.gpu_backend == "llvm" else " --backend=" + a.gpu_backend
    return "fuser-run --check%s on the GPU%s" % (backend, ", alone" if alone else "")


def gpu_case(a, seed, work):
    """One precompiled seed on the GPU."""
    low = os.path.join(a.precompiled, "seed-%d.lowered.fir" % seed)
    ptx = os.path.join(a.precompiled, "seed-%d.ptx" % seed)
    rc, out = run(gpu_command(a, ptx) + [low], a.timeout)
    return gpu_verdict(seed, rc, out, gpu_stage(a))


def batch_seeds(text):
    """The seeds of the difftest fusions in a lowered batch file, in order."""
    return [int(x) for x in re.findall(r"^fusion @difftest_(\d+)\b", text, re.M)]


def precompile_batch(a, seeds, work):
    """Seeds compiled as one file, batch-<first>.lowered.fir and .ptx in
    a.precompile; a batch the compiler refuses as a whole falls back to one
    case per seed, so every seed gets its own verdict."""
    first = seeds[0]
    src = os.path.join(work, "batch-%d.fir" % first)
    with open(src, "w") as f:
        for s in seeds:
            f.write(gen_fusion.generate(s)[0])
    low = os.path.join(a.precompile, "batch-%d.lowered.fir" % first)
    ptx = os.path.join(a.precompile, "batch-%d.ptx" % first)
    dev = "--device=" + a.gpu_device
    try:
        rc, out = run([a.opt, dev, "--pass=all", src, "-o", low], a.timeout)
        if rc == 0:
            rc, out = run([a.opt, dev, "--pass=all", "--emit=ptx", src, "-o", ptx], a.timeout)
        if rc == 0 and a.ptxas:
            rc, out = run([a.ptxas, "-arch=" + a.ptxas_arch, ptx, "-o", os.devnull], a.timeout)
        if rc == 0:
            return [Case(s, "pass") for s in seeds]
    finally:
        os.remove(src)
    for p in (low, ptx):
        if os.path.exists(p):
            os.remove(p)
    return [precompile_case(a, s, work) for s in seeds]


# A fusion's summary line on the GPU, its outputs and its checks.
GPU_HEADER = re.compile(r"^fusion @difftest_(\d+): .*\(gpu \d+: .*, (\d+) kernels?\)$")


def clean_passes(log):
    """Seeds whose report in a batch's log is whole and passed: the summary
    line, then a check line that says PASS for every output."""
    passed, cur, outs, checks, ok, kernels = {}, None, 0, 0, True, 0

    def close():
        if cur is not None and ok and outs and checks == outs:
            passed[cur] = kernels
    for line in log.splitlines():
        m = GPU_HEADER.match(line)
        if m:
            close()
            cur, outs, checks, ok, kernels = int(m.group(1)), 0, 0, True, int(m.group(2))
            continue
        if cur is None:
            continue
        if line.startswith("  output "):
            outs += 1
        elif line.startswith("  check "):
            checks += 1
            ok &= ": PASS " in line
        elif not line.startswith("  "):
            close()
            cur = None
    close()
    return passed


def gpu_batch(a, first, work):
    """One precompiled batch on the GPU: one process for all its fusions,
    then each fusion the log does not pass cleanly on its own."""
    low = os.path.join(a.precompiled, "batch-%d.lowered.fir" % first)
    ptx = os.path.join(a.precompiled, "batch-%d.ptx" % first)
    with open(low) as f:
        seeds = batch_seeds(f.read())
    base = gpu_command(a, ptx) + ["--no-repro"]
    rc, out = run(base + ["--error-limit=0", low], a.timeout * max(1, len(seeds) // 4))
    passed = clean_passes(out) if rc != "timeout" else {}
    cases = []
    for s in seeds:
        if s in passed:
            cases.append(Case(s, "pass" if passed[s] else "host"))
            continue
        rc, out = run(base + ["--fusion=@difftest_%d" % s, low], a.timeout)
        c = gpu_verdict(s, rc, out, gpu_stage(a, alone=True))
        c.batch = low
        cases.append(c)
    return cases


def signature(c):
    """What a failure is, without names and numbers: its stage and first error."""
    first = next((l for l in c.detail.splitlines() if "error:" in l), c.detail.strip()[:200])
    first = first.split("error:", 1)[-1]
    return (c.status, c.stage, re.sub(r"'[^']*'|\d+", "#", first))


def reduce_text(a, text, work):
    """Delta reduction of a failing fusion: drop outputs, then ops and inputs
    whose values nothing uses, then shrink each constant extent (to 1, 2, 3
    or half), while the failure keeps its signature."""
    want = signature(kir_check(a, text, work, "reduce"))
    lines = text.splitlines()

    def defined(line):
        m = re.match(r"\s*(%[\w.]+(?:\s*,\s*%[\w.]+)*)\s*=", line)
        return re.findall(r"%[\w.]+", m.group(1)) if m else []

    def ok(cand):
        return signature(kir_check(a, "\n".join(cand) + "\n", work, "reduce")) == want

    changed = True
    while changed:
        changed = False
        # fewer outputs
        for i, line in enumerate(lines):
            m = re.match(r"(\s*output )(.*)", line)
            if not m:
                continue
            outs = [o.strip() for o in m.group(2).split(",")]
            for o in list(outs):
                if len(outs) == 1:
                    break
                rest = [x for x in outs if x != o]
                cand = lines[:i] + [m.group(1) + ", ".join(rest)] + lines[i + 1:]
                if ok(cand):
                    lines, outs, changed = cand, rest, True
        # dead ops and inputs
        for i in range(len(lines) - 1, -1, -1):
            names = defined(lines[i])
            if not names:
                continue
            rest = "\n".join(lines[:i] + lines[i + 1:])
            if any(re.search(re.escape(n) + r"(?![\w.])", rest) for n in names):
                continue
            cand = lines[:i] + lines[i + 1:]
            if ok(cand):
                lines, changed = cand, True
    # smaller sizes: each constant extent, everywhere it is a size at once
    text = "\n".join(lines) + "\n"
    for e in sorted({int(x) for x in SIZE_LIST.findall(text) for x in re.findall(r"\d+", x)}, reverse=True):
        for m in sorted({1, 2, 3, e // 2}):
            if m >= e or e < 2:  # 1 broadcasts and 0 is empty: sizes that mean more than a count
                continue
            cand = resize(text, e, m)
            if cand != text and ok(cand.splitlines()):
                text = cand
                break
    return text


# The lists that hold sizes: a type's extents and an input's example_shape.
SIZE_LIST = re.compile(r"(?:\b(?:f64|f32|f16|bf16|i64|i32|bool)|example_shape=)\[([^\]]*)\]")


def resize(text, old, new):
    """text with the extent `old` written as `new` in every size list."""
    def one(m):
        inner = re.sub(r"(?<![\w.])%d(?![\w.])" % old, str(new), m.group(1))
        return m.group(0)[:m.start(1) - m.start(0)] + inner + "]"
    return SIZE_LIST.sub(one, text)


def reproducer(a, c):
    """Write the failing seed's fusion to a.out with how to reproduce it."""
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "seed-%d.fir" % c.seed)
    text, _ = gen_fusion.generate(c.seed)
    if a.reduce and c.status == "fail":
        with tempfile.TemporaryDirectory(prefix="fuser-difftest-reduce.") as work:
            text = reduce_text(a, text, work)
    here = os.path.abspath(__file__)
    with open(path, "w") as f:
        f.write("// difftest FAIL, seed %d, at %s\n" % (c.seed, c.stage))
        f.write("// remake: %s --start %d --count 1 %s\n" % (here, c.seed, a.build))
        f.write("// run:    %s --pass=all %s -o /tmp/l.fir && %s --device=kir --check /tmp/l.fir\n" %
                (a.opt, path, a.run))
        f.write(text)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("build", help="the build folder with fuser-opt and fuser-run")
    ap.add_argument("--start", type=int, default=int(os.environ.get("DIFFTEST_START", "0")),
                    help="first seed (default $DIFFTEST_START or 0)")
    ap.add_argument("--count", type=int, default=int(os.environ.get("DIFFTEST_COUNT", "100")),
                    help="number of seeds (default $DIFFTEST_COUNT or 100)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=int, default=120, help="seconds per command (default 120)")
    ap.add_argument("--out", default="difftest-failures", help="folder for reproducers (default ./difftest-failures)")
    ap.add_argument("--precompile", metavar="DIR")
    ap.add_argument("--precompiled", metavar="DIR")
    ap.add_argument("--batch", type=int, default=1, metavar="N",
                    help="with --precompile: N seeds' fusions in one file and one PTX module (default 1)")
    ap.add_argument("--gpu-backend", choices=["llvm", "nvrtc"], default="llvm",
                    help="with --precompiled: the carried PTX (llvm, the default) or NVRTC on the GPU host")
    ap.add_argument("--ptxas", nargs="?", const="ptxas", default=None, metavar="PTXAS",
                    help="with --precompile: assemble each case's PTX with ptxas too")
    ap.add_argument("--ptxas-arch", default="sm_90", help="ptxas -arch (default sm_90)")
    ap.add_argument("--gpu-device", default=os.environ.get("FUSER_GPU_DEVICE", "h100"),
                    help="fuser-opt --device for --precompile (default h100)")
    ap.add_argument("--no-reduce", dest="reduce", action="store_false",
                    help="write the whole generated fusion as the reproducer (default: reduce it first)")
    ap.add_argument("--run-arg", dest="run_args", action="append", default=[], metavar="ARG",
                    help="an argument for every fuser-run (repeat it: --run-arg=--rtol=1e-4)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case")
    a = ap.parse_args()
    a.opt = os.path.join(a.build, "fuser-opt")
    a.run = os.path.join(a.build, "fuser-run")
    need = [a.run] + ([] if a.precompiled else [a.opt])
    for t in need:
        if not os.access(t, os.X_OK):
            sys.exit("difftest: %s is missing (build it first)" % t)

    with tempfile.TemporaryDirectory(prefix="fuser-difftest.") as work:
        return drive(a, work)


def is_tarball(path):
    return path.endswith(".tar.gz") or path.endswith(".tgz")


def drive(a, work):
    """The run itself; `work` is a scratch folder.  A --precompile or
    --precompiled path ending in .tar.gz is an archive of the folder (the
    cases compress about tenfold, for carrying to the GPU host)."""
    archive = None
    if a.precompiled and is_tarball(a.precompiled):
        with tarfile.open(a.precompiled) as t:
            if hasattr(tarfile, "data_filter"):
                t.extractall(os.path.join(work, "pre"), filter="data")
            else:
                t.extractall(os.path.join(work, "pre"))
        a.precompiled = os.path.join(work, "pre")
    if a.precompile and is_tarball(a.precompile):
        archive, a.precompile = a.precompile, os.path.join(work, "pre")
    # units of work: a seed, or (batches) a list of seeds / a batch's first seed
    if a.precompiled:
        names = os.listdir(a.precompiled)
        seeds = sorted(int(m.group(1)) for m in
                       (re.match(r"seed-(\d+)\.lowered\.fir$", n) for n in names) if m)
        units = [[s] for s in seeds]
        fns = [lambda u: [gpu_case(a, u[0], work)]] * len(units)
        for first in sorted(int(m.group(1)) for m in
                            (re.match(r"batch-(\d+)\.lowered\.fir$", n) for n in names) if m):
            units.append(first)
            fns.append(lambda u: gpu_batch(a, u, work))
        where = "on the GPU" + (" (NVRTC)" if a.gpu_backend != "llvm" else "")
    else:
        seeds = list(range(a.start, a.start + a.count))
        if a.precompile:
            os.makedirs(a.precompile, exist_ok=True)
            n = max(1, a.batch)
            units = [seeds[i:i + n] for i in range(0, len(seeds), n)]
            fns = [(lambda u: precompile_batch(a, u, work)) if n > 1 else
                   (lambda u: [precompile_case(a, u[0], work)])] * len(units)
            where = "precompiled"
        else:
            units = [[s] for s in seeds]
            fns = [lambda u: [kir_case(a, u[0], work)]] * len(units)
            where = "on the kernel-IR interpreter"

    counts = {"pass": 0, "nokernel": 0, "host": 0, "fail": 0}
    failed = []
    seen = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for c in (c for cs in ex.map(lambda fu: fu[0](fu[1]), zip(fns, units)) for c in cs):
            seen.append(c.seed)
            counts[c.status] += 1
            if a.verbose:
                print("%-8s seed %d" % (c.status, c.seed), flush=True)
            if c.status != "fail":
                continue
            failed.append(c)
            if a.precompiled:
                path = os.path.join(a.out, "seed-%d.lowered.fir" % c.seed)
                os.makedirs(a.out, exist_ok=True)
                batch = getattr(c, "batch", None)
                # a batch's reproducer is the whole batch file: run it with --fusion=@difftest_S
                shutil.copy(batch or os.path.join(a.precompiled, "seed-%d.lowered.fir" % c.seed), path)
            else:
                path = reproducer(a, c)
            print("FAIL seed %d at %s; reproducer %s" % (c.seed, c.stage, path), flush=True)
            for line in c.detail.strip().splitlines()[:12]:
                print("     " + line)
    if archive:
        with tarfile.open(archive, "w:gz") as t:
            t.add(a.precompile, arcname=".")
    lo, hi = (min(seen), max(seen)) if seen else (0, 0)
    host = ", %d with no GPU work (host views only)" % counts["host"] if a.precompile or counts["host"] else ""
    print("difftest: %d fusions (seeds %d..%d) %s: %d passed, %d no kernel%s, %d failed" %
          (len(seen), lo, hi, where, counts["pass"], counts["nokernel"], host, counts["fail"]))
    if failed:
        print("failed seeds: %s" % " ".join(str(c.seed) for c in failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
