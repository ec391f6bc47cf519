#!/usr/bin/env python3
"""fuser: hand-edited persistent schedules of one fusion, for timing beside the compiler's.

    python3 bench/persistent/variants.py BUILD OUT FILE.fir VARIANT... [--flags=F]

FILE.fir holds one fusion whose first persistent segment has a row
schedule (`reference %X [i, r]`, as --pass=segment,schedule writes for a
normalization over the last dim).  Each VARIANT is `REDUCE:VW:TX:TY`:

  REDUCE  warp or block (the schedule's reduce=)
  VW      elements a vector (split r, VW -> ro, rv)
  TX      threads a row (split ro, TX -> rs, rx; tail=exact where TX
          divides the row's vectors, else guard)
  TY      rows a block (split i, TY -> ib, iy on threadIdx.y; 1: none)

and `compiler` stands for the compiler's own schedule.  For each,
OUT/<fusion>_<variant>.sched.fir (the edited schedule), .lowered.fir and
.ptx are written (`fuser-opt --pass=index-graph,lower`, then `--emit=ptx`),
and OUT/cases.json lists them (appending to an existing list) in the form
`bench/kernel_bench.py run BUILD OUT` times on the GPU host.  --flags adds
fuser-opt flags to both steps (`--flags=--enable=tid_range`; the case
names get the flag's last word).  The lowering's verifier judges each
variant; one it refuses is reported and left out.  Exit status: 0, or 1
when a variant was left out, 2 on bad arguments.
"""
import json
import os
import re
import subprocess
import sys

SCHEDULE = re.compile(r"( *)schedule \{([^\n]*)\} \{\n(.*?)\n *\}\n", re.S)


def fail(msg):
    print(f"variants.py: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_variant(text):
    if text == "compiler":
        return None
    parts = text.split(":")
    if len(parts) != 4 or parts[0] not in ("warp", "block") or not all(p.isdigit() and int(p) > 0 for p in parts[1:]):
        fail(f"variant '{text}' is not REDUCE:VW:TX:TY (REDUCE warp or block, the rest positive integers)")
    return parts[0], int(parts[1]), int(parts[2]), int(parts[3])


def row_shape(text):
    """(rows, row length) of the reference's [i, r] tensor, from its type in the segment."""
    m = SCHEDULE.search(text)
    ref = re.search(r"reference (%\w+) \[i, r\]", m.group(3)) if m else None
    if not ref:
        fail("no persistent schedule with `reference %X [i, r]` (a normalization over the last dim)")
    ty = re.search(re.escape(ref.group(1)) + r" = [^\n]*: \w+\[(\d+), (\d+)\]", text)
    if not ty:
        fail(f"the reference {ref.group(1)}'s type is not a constant [rows, row] shape")
    return ref.group(1), int(ty.group(1)), int(ty.group(2))


def edited(text, ref, rows, row, v):
    reduce_mode, vw, tx, ty = v
    if row % vw:
        return None, f"{vw} does not divide the row of {row}"
    vecs = row // vw
    lines = [f"reference {ref} [i, r]", f"split r, {vw} -> ro, rv {{tail=exact}}",
             f"split ro, {tx} -> rs, rx {{tail={'exact' if vecs % tx == 0 else 'guard'}}}"]
    if ty > 1:
        lines.append(f"split i, {ty} -> ib, iy {{tail={'exact' if rows % ty == 0 else 'guard'}}}")
        lines.append("loop [ib: blockIdx.x, iy: threadIdx.y, rx: threadIdx.x, rs: unroll, rv: vectorize]")
    else:
        lines.append("loop [i: blockIdx.x, rx: threadIdx.x, rs: unroll, rv: vectorize]")
    m = SCHEDULE.search(text)
    ind = m.group(1)
    attrs = re.sub(r"reduce=\w+", f"reduce={reduce_mode}", m.group(2))
    body = "\n".join(ind + "  " + line for line in lines)
    return text[:m.start()] + f"{ind}schedule {{{attrs}}} {{\n{body}\n{ind}}}\n" + text[m.end():], None


def main(argv):
    flags = [a[len("--flags="):] for a in argv if a.startswith("--flags=")]
    args = [a for a in argv if not a.startswith("--flags=")]
    if len(args) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    build, out, fir, variants = args[0], args[1], args[2], [parse_variant(v) for v in args[3:]]
    extra = " ".join(flags).split()
    opt = os.path.join(build, "fuser-opt")
    r = subprocess.run([opt, fir, "--pass=segment,schedule"] + extra, capture_output=True, text=True)
    if r.returncode:
        fail(f"fuser-opt --pass=segment,schedule failed on {fir}:\n{r.stderr.strip()}")
    text = r.stdout
    ref, rows, row = row_shape(text)
    fusion = re.search(r"fusion @(\w+)", text).group(1)
    suffix = "".join("_" + re.split(r"[=,]", f)[-1] for f in extra)
    os.makedirs(out, exist_ok=True)
    listing_path = os.path.join(out, "cases.json")
    listing = dict(cases=[], failed=[])
    if os.path.exists(listing_path):
        with open(listing_path) as f:
            listing = json.load(f)
    status = 0
    for spec, v in zip(args[3:], variants):
        name = f"{fusion}_{spec.replace(':', '_')}{suffix}"
        if v is None:
            sched, why = text, None
        else:
            sched, why = edited(text, ref, rows, row, v)
        if why is None:
            base = os.path.join(out, name)
            with open(base + ".sched.fir", "w") as f:
                f.write(sched)
            r = subprocess.run([opt, base + ".sched.fir", "--pass=index-graph,lower", "-o", base + ".lowered.fir"] + extra,
                               capture_output=True, text=True)
            if r.returncode == 0:
                r = subprocess.run([opt, base + ".lowered.fir", "--emit=ptx", "-o", base + ".ptx"] + extra,
                                   capture_output=True, text=True)
            why = r.stderr.strip().splitlines()[0] if r.returncode else None
        if why:
            print(f"left out {name}: {why}")
            listing["failed"].append(dict(case=name, why=why))
            status = 1
            continue
        listing["cases"] = [c for c in listing["cases"] if c["case"] != name] + [dict(case=name, peer=None)]
        print(f"wrote {name}")
    with open(listing_path, "w") as f:
        json.dump(listing, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
