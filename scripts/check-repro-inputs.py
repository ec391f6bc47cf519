#!/usr/bin/env python3
"""fuser: check a repro folder's nvFuser script against its recorded inputs.

    scripts/check-repro-inputs.py DIR [--device=cuda|cpu]

DIR is a folder fuser-run wrote (docs/repro.md): fusion.fir, inputs/*.npy,
fusion.py.  This evaluates the `inputs = [...]` list of fusion.py with
PyTorch (nothing else of the script runs: no nvFuser needed) in DIR and
compares each entry with what fusion.fir records for that input: the dtype,
the shape (example_shape), the strides (example_strides, else the layout's
`strides`, else row-major) and the values (the .npy file, bit for bit; bf16
files hold <u2 bit patterns).  --device=cpu evaluates the list on the CPU
(the script says "cuda").  Exit status 0 when every input matches, 1 when
one does not (each named), 2 on a usage error or without torch and numpy.
"""
import ast
import os
import re
import sys

DTYPES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i64": "int64", "i32": "int32",
          "bool": "bool"}


def recorded_inputs(fir_text):
    """(name, dtype, shape, strides, npy path or None, scalar text or None) per input of the .fir."""
    out = []
    for m in re.finditer(r"^\s*%(\S+) = input (\w+)(\[[^\]]*\])?\s*(\{.*\})?\s*$", fir_text, re.M):
        name, dt, dims, attrs = m.group(1), m.group(2), m.group(3), m.group(4) or ""

        def ints(key):
            a = re.search(r"\b%s=\[([^\]]*)\]" % key, attrs)
            return [int(x) for x in a.group(1).split(",") if x.strip()] if a else None
        npy = re.search(r'npy="([^"]*)"', attrs)
        value = re.search(r"\bexample=([^,}]+)", attrs)
        shape = ints("example_shape")
        if shape is None and dims:
            shape = [int(x) for x in dims[1:-1].split(",") if x.strip()]
        strides = ints("example_strides") or ints("strides")
        if strides is None and shape is not None:
            strides, s = [], 1
            for n in reversed(shape):
                strides.insert(0, s)
                s *= max(n, 1)
        out.append((name, dt, shape if dims else None, strides if dims else None, npy.group(1) if npy else None,
                    value.group(1).strip() if value else None))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--device=")]
    dev = ([a[9:] for a in sys.argv[1:] if a.startswith("--device=")] or ["cuda"])[-1]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        import numpy
        import torch
    except ImportError as e:
        print("check-repro-inputs: needs torch and numpy (%s)" % e, file=sys.stderr)
        return 2
    d = args[0]
    with open(os.path.join(d, "fusion.py")) as f:
        tree = ast.parse(f.read())
    with open(os.path.join(d, "fusion.fir")) as f:
        recorded = recorded_inputs(f.read())
    lists = [n.value for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1 and
             isinstance(n.targets[0], ast.Name) and n.targets[0].id == "inputs"]
    if not lists or not isinstance(lists[0], ast.List):
        print("check-repro-inputs: %s/fusion.py has no inputs list" % d, file=sys.stderr)
        return 1
    entries = lists[0].elts
    if len(entries) != len(recorded):
        print("check-repro-inputs: %d entries in the inputs list, %d inputs in fusion.fir" % (len(entries), len(recorded)))
        return 1
    os.chdir(d)
    bad = 0
    for node, (name, dt, shape, strides, npy, value) in zip(entries, recorded):
        text = ast.unparse(node).replace('device="cuda"', 'device="%s"' % dev).replace("device='cuda'", "device='%s'" % dev)
        got = eval(text, {"torch": torch, "numpy": numpy})
        why = []
        if shape is None:  # a scalar input
            if value is not None and float(got) != float(value.replace("true", "1").replace("false", "0")):
                why.append("value %r, recorded %s" % (got, value))
        else:
            if str(got.dtype) != "torch." + DTYPES[dt]:
                why.append("dtype %s, recorded %s" % (got.dtype, dt))
            if list(got.shape) != shape:
                why.append("shape %s, recorded %s" % (list(got.shape), shape))
            if list(got.stride()) != strides and not any(n == 0 for n in shape):
                why.append("strides %s, recorded %s" % (list(got.stride()), strides))
            if npy and not any(s == 0 and n > 1 for s, n in zip(strides, shape)):
                want = torch.from_numpy(numpy.load(npy))
                if dt == "bf16":
                    want = want.view(torch.bfloat16)
                def raw(t):  # the bytes, row-major (bool as is: 1 byte already)
                    t = t.cpu().contiguous().reshape(-1)
                    return t if t.dtype == torch.bool else t.view(torch.uint8)
                if list(want.shape) != list(got.shape) or not torch.equal(raw(got), raw(want)):
                    why.append("values differ from %s" % npy)
        if why:
            bad += 1
            print("MISMATCH %%%s: %s" % (name, "; ".join(why)))
        else:
            print("ok %%%s" % name)
    print("%d of %d inputs match what fusion.fir records" % (len(recorded) - bad, len(recorded)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
