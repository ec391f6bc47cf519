#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz harnesses from the tree.

    fuzz/make_corpus.py OUT_DIR [--tools BUILD_DIR] [--shared DIR] [--dicts DIR]

Writes OUT_DIR/<target>/<hash> for the targets fir, kir, py, pipeline and
npy, from:
  - lit/**/*.fir, *.kir, *.py, cut at `// -----` / `# -----` lines as
    --split-input-file cuts them;
  - test/gpu/*.fir; test/fusions/*.py and the real-fusion corpus
    (--shared DIR, default ../shared/fusions when it exists);
  - with --tools (a build with fuser-translate and fuser-opt): every Python
    fusion translated to .fir, and that .fir after --pass=all (segments,
    schedules and kernels, which the .fir parser reads too), and the
    kernels of that output for the kernel-IR parser;
  - .npy files made here (every dtype the reader knows, C and Fortran
    order, format versions 1 to 3).
With --dicts, DIR/<target>.dict is fuzz/dict/<target>.dict (pipeline:
fir.dict) plus the names of the tables (include/fuser/ops.def, kinds.def,
the dtypes of ir.h), so the dictionaries follow the op table.
Nothing is checked in: the corpus follows the tree.
"""
import argparse
import hashlib
import os
import pathlib
import re
import struct
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_INPUT = 64 * 1024  # FUZZ_MAX_INPUT in fuzz/fuzz.h


def chunks(text, leader):
    """The pieces of `text` between lines that read `<leader> -----`."""
    sep = re.compile(r"^\s*" + re.escape(leader) + r" -----\s*$", re.M)
    return [c for c in sep.split(text) if c.strip()]


class Corpus:
    def __init__(self, out):
        self.out = pathlib.Path(out)
        self.count = {}

    def add(self, target, data):
        if isinstance(data, str):
            data = data.encode()
        if not data or len(data) > MAX_INPUT:
            return
        d = self.out / target
        d.mkdir(parents=True, exist_ok=True)
        p = d / hashlib.sha1(data).hexdigest()[:16]
        if not p.exists():
            p.write_bytes(data)
            self.count[target] = self.count.get(target, 0) + 1


def npy_bytes(descr, shape, fortran, version):
    """A .npy file of zeros-and-ones data for `descr` and `shape`."""
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False",
        "".join("%d, " % s for s in shape) if len(shape) != 1 else "%d," % shape[0])
    size_field = 2 if version == 1 else 4
    pre = 6 + 2 + size_field
    total = pre + len(header) + 1
    pad = (64 - total % 64) % 64
    header = header + " " * pad + "\n"
    n = 1
    for s in shape:
        n *= s
    itemsize = int(descr[2:])
    body = bytes((i % 2) if itemsize == 1 else 0 for i in range(n * itemsize))
    if descr[1] == "f" and itemsize >= 4 and n:
        fmt = {"<": "<", ">": ">", "=": "<", "|": "<"}[descr[0]] + ("f" if itemsize == 4 else "d")
        body = b"".join(struct.pack(fmt, float(i) - 1.5) for i in range(n))
    ln = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + ln + header.encode("latin1") + body


def add_npy(c):
    for descr in ["<f8", "<f4", "<f2", "<i8", "<i4", "|b1", "<u2", ">f4", "=i8", ">i4"]:
        for shape in [(), (3,), (2, 3), (1, 2, 2)]:
            for fortran in (False, True):
                if fortran and len(shape) < 2:
                    continue
                c.add("npy", npy_bytes(descr, shape, fortran, 1))
    c.add("npy", npy_bytes("<f4", (2, 2), False, 2))
    c.add("npy", npy_bytes("<f4", (4,), False, 3))


def kernels_of(fir):
    """The kernel-IR blocks printed inside the segments of a lowered .fir,
    dedented: real kernels for the kernel-IR parser."""
    out = []
    lines = fir.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^( *)kernel @", lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        block = []
        while i < len(lines):
            block.append(lines[i][indent:])
            i += 1
            if lines[i - 1] == " " * indent + "}":
                break
        out.append("\n".join(block) + "\n")
    return out


def table_names():
    """Op, scheduler-kind and dtype names from the tables."""
    inc = ROOT / "include" / "fuser"
    ops = re.findall(r'^FU_OP\(\s*\w+\s*,\s*"([^"]+)"', (inc / "ops.def").read_text(), re.M)
    kinds = re.findall(r'^FU_SCHED_KIND\(\s*\w+\s*,\s*"([^"]+)"', (inc / "kinds.def").read_text(), re.M)
    dtypes = re.findall(r'X\(\w+,\s*"([a-z0-9]+)"', (inc / "ir.h").read_text())
    return ops, kinds, dtypes


def write_dicts(out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ops, kinds, dtypes = table_names()
    extra = {
        "fir": ops + kinds + dtypes + ["%s[" % d for d in dtypes],
        "kir": dtypes,
        "py": ["fd.ops.%s(" % o for o in ops],
        "npy": [],
    }
    extra["pipeline"] = extra["fir"]
    for t, names in extra.items():
        base = (ROOT / "fuzz" / "dict" / ("fir" if t == "pipeline" else t)).with_suffix(".dict").read_text()
        lines = ['"%s"' % n.replace("\\", "\\\\").replace('"', '\\"') for n in names]
        (out / (t + ".dict")).write_text(base + "\n".join(lines) + "\n")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, timeout=120)
    return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--tools", help="a build folder with fuser-translate and fuser-opt")
    ap.add_argument("--dicts", help="write the dictionaries, with the table names, to this folder")
    ap.add_argument("--shared", help="the real-fusion corpus (default: ../shared/fusions beside the tree)")
    a = ap.parse_args()
    c = Corpus(a.out)
    py_files = []
    for p in sorted((ROOT / "lit").rglob("*")):
        if not p.is_file():
            continue
        text = p.read_text(errors="replace")
        if p.suffix == ".fir":
            for ch in chunks(text, "//"):
                c.add("fir", ch)
                c.add("pipeline", ch)
        elif p.suffix == ".kir":
            for ch in chunks(text, "//"):
                c.add("kir", ch)
        elif p.suffix == ".py" and p.parent.name != "Inputs":
            for ch in chunks(text, "#"):
                c.add("py", ch)
    for p in sorted((ROOT / "test" / "gpu").glob("*.fir")):
        text = p.read_text(errors="replace")
        c.add("fir", text)
        c.add("pipeline", text)
    shared = pathlib.Path(a.shared) if a.shared else ROOT.parent / "shared" / "fusions"
    for d in [ROOT / "test" / "fusions", shared]:
        if d.is_dir():
            py_files += sorted(d.glob("*.py"))
        elif d == shared and a.shared:
            print("make_corpus: %s is not a folder" % d, file=sys.stderr)
    for p in py_files:
        c.add("py", p.read_bytes())
    if a.tools:
        tools = pathlib.Path(a.tools)
        for p in py_files:
            fir = run([str(tools / "fuser-translate"), "--from=nvfuser-py", str(p)])
            if fir is None:
                continue
            c.add("fir", fir)
            c.add("pipeline", fir)
            tmp = pathlib.Path(a.out) / "tmp.fir"
            tmp.write_text(fir)
            lowered = run([str(tools / "fuser-opt"), "--pass=all", str(tmp)])
            tmp.unlink()
            if lowered is not None:
                c.add("fir", lowered)
                c.add("pipeline", lowered)
                for k in kernels_of(lowered):
                    c.add("kir", k)
    add_npy(c)
    if a.dicts:
        write_dicts(a.dicts)
    print("make_corpus: " + ", ".join("%s %d" % kv for kv in sorted(c.count.items())))


if __name__ == "__main__":
    main()
