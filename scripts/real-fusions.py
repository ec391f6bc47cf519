#!/usr/bin/env python3
"""The real-fusion corpus (test/fusions/real/*.py) through fuser.

    scripts/real-fusions.py BUILD_DIR [--update] [--report]

Each fusion is imported (fuser-translate), run through the whole pipeline
(fuser-opt --pass=all), compiled to PTX (--emit=ptx, which fails where a
segment's kind has no kernel yet; ptxas checks the PTX when it is there),
and, when every segment has a kernel and the fusion is small enough for the
kernel-IR interpreter, run there against the reference interpreter
(fuser-run --device=kir --check).  The stage each one reaches is compared
with test/fusions/real/expected.txt: a fusion that stops sooner than recorded
fails; one that gets further is reported (--update rewrites the file).  --report prints the counts and every failure
with its reason, as docs/frontend.md records them.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "test", "fusions", "real")
EXPECTED = os.path.join(CORPUS, "expected.txt")
KIR_ELEMENTS = 1 << 18  # the kernel-IR interpreter's budget: elements over every typed value
DEFAULT_EXTENT = 4
# How far each stage gets: a fusion that ends further than expected.txt says
# is reported but does not fail (a new kernel kind lands); one that ends
# sooner, or anywhere else at the same distance, fails.
RANK = {"import-error": 0, "pipeline-error": 1, "emit-error": 2, "ptxas-error": 2, "partial": 3, "kir-fail": 4,
        "kir-too-large": 5, "kir-pass": 5, "views-only": 5}


def run(cmd, timeout=300):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %ds" % timeout


def first_error(text):
    for line in text.splitlines():
        if "error:" in line:
            return line.split("error:", 1)[1].strip()
    lines = text.strip().splitlines()
    return lines[0] if lines else "failed"


def elements(fir):
    total = 0
    for dims in re.findall(r"\b(?:f16|bf16|f32|f64|i32|i64|bool)\[([^\]]*)\]", fir):
        n = 1
        for d in [x.strip() for x in dims.split(",") if x.strip()]:
            n *= int(d) if d.isdigit() else DEFAULT_EXTENT
        total += n
    for dims in re.findall(r"example_shape=\[([^\]]*)\]", fir):  # the data the inputs list asks for
        n = 1
        for d in [x.strip() for x in dims.split(",") if x.strip()]:
            n *= int(d)
        total += n
    return total


def stage_of(build, path, work):
    """(stage, reason) for one fusion."""
    name = os.path.splitext(os.path.basename(path))[0]
    fir = os.path.join(work, name + ".fir")
    rc, _, err = run([os.path.join(build, "fuser-translate"), "--from=nvfuser-py", path, "-o", fir])
    if rc:
        return "import-error", first_error(err)
    opt = os.path.join(build, "fuser-opt")
    rc, lowered, err = run([opt, "--pass=all", fir])
    if rc:
        return "pipeline-error", first_error(err)
    ptx = os.path.join(work, name + ".ptx")
    rc, _, err = run([opt, "--pass=all", "--emit=ptx", fir, "-o", ptx])
    views_only = rc and "nothing to emit" in err and "segment @" not in lowered  # no kernel needed
    if rc and not views_only:
        # a segment its kind's scheduler does not take yet (fu_segment_no_kernel_reason)
        kinds = sorted(set(re.findall(r"\(kind (\w+)\) has no kernel: (?:its kind cannot be compiled yet|it has no schedule)", err)))
        if kinds:
            return "partial", "segments of kind %s have no kernel yet" % ", ".join(kinds)
        return "emit-error", first_error(err)
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if os.path.exists(ptxas) and not views_only:
        rc, _, err = run([ptxas, "-arch=sm_90", ptx, "-o", os.devnull])
        if rc:
            return "ptxas-error", first_error(err)
    if elements(lowered) > KIR_ELEMENTS:
        return "kir-too-large", "more than %d elements for the kernel-IR interpreter" % KIR_ELEMENTS
    rc, out, err = run([os.path.join(build, "fuser-run"), fir, "--device=kir", "--check", "--random",
                        "--default-extent=%d" % DEFAULT_EXTENT, "--print-values=0", "--no-repro"])
    if rc:
        return "kir-fail", first_error(err + out)
    return ("views-only", "no kernel needed; the check passes") if views_only else ("kir-pass", "")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = os.path.abspath(args[0])
    names = sorted(f for f in os.listdir(CORPUS) if f.endswith(".py"))
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for f in names:
            results[f[:-3]] = stage_of(build, os.path.join(CORPUS, f), work)
    if "--update" in sys.argv:
        with open(EXPECTED, "w") as out:
            out.write("# The stage each real fusion reaches (scripts/real-fusions.py --update writes this).\n")
            for n in sorted(results):
                out.write("%s: %s\n" % (n, results[n][0]))
    counts = {}
    for stage, _ in results.values():
        counts[stage] = counts.get(stage, 0) + 1
    n = len(results)
    imported = n - counts.get("import-error", 0)
    compiled = sum(counts.get(k, 0) for k in ("kir-pass", "kir-too-large", "kir-fail", "views-only"))
    print("real fusions: %d; imported %d; whole pipeline %d; compiled (PTX for every segment, or views only) %d; kernel-IR check passed %d "
          "(of %d small enough)" % (n, imported, imported - counts.get("pipeline-error", 0), compiled,
                                   counts.get("kir-pass", 0) + counts.get("views-only", 0),
                                   counts.get("kir-pass", 0) + counts.get("kir-fail", 0) + counts.get("views-only", 0)))
    if "--report" in sys.argv:
        for name in sorted(results):
            stage, why = results[name]
            print("- %s: %s%s" % (name, stage, ": " + why if why else ""))
    expected = {}
    if os.path.exists(EXPECTED):
        for line in open(EXPECTED):
            if line.strip() and not line.startswith("#"):
                k, v = line.split(":", 1)
                expected[k.strip()] = v.strip()
    bad = 0
    for name in sorted(set(results) | set(expected)):
        got = results.get(name, ("missing", ""))[0]
        want = expected.get(name, "not listed")
        if got == want:
            continue
        why = results.get(name, ("", ""))[1]
        if RANK.get(got, -1) > RANK.get(want, 99):  # further than recorded: good news, not a failure
            print("IMPROVED %s: expected %s, got %s (run with --update to record it)" % (name, want, got))
            continue
        print("MISMATCH %s: expected %s, got %s %s" % (name, want, got, why))
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
