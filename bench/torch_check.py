#!/usr/bin/env python3
"""fuser's GPU outputs against PyTorch: an independent check of the kernels.

  torch_check.py prepare BUILD OUT FILE.fir|FILE.py...
      Where LLVM is (no GPU, no PyTorch needed): every fusion of each file
      becomes OUT/<case>.py, an nvFuser script with its inputs
      (`fuser-translate --to=nvfuser-py --with-inputs`), and OUT/<case>.lowered.fir
      and OUT/<case>.ptx (`fuser-opt --pass=all`).  A file of several
      fusions gives one case per fusion (<file>__<fusion>).  Fusions with
      random-number ops are left out (their values cannot match PyTorch's
      generator), and so are fusions that are only host views.

  torch_check.py BUILD PRECOMPILED NVF_TORCH_DIR CASE.py...

On the GPU host: each CASE (an nvFuser definition, precompiled here by
kernel_bench.py into PRECOMPILED/<case>.lowered.fir and .ptx) is run twice
on the same inputs: by PyTorch, through nvf_torch.py (in NVF_TORCH_DIR: it
executes the definition with torch ops, following nvFuser's semantics), and
by fuser-run on the GPU (--input NAME=FILE.npy, --save-outputs).  Each output
is compared by ||fuser - torch|| / ||torch|| (float outputs) or exactly
(integer and bool outputs).  The bound is the output dtype's: 1e-5 for f32
and f64, 2e-3 for f16 and 1.6e-2 for bf16 (about two units in the last
place: both sides round their f32 results to the narrow type, and a
result near a rounding boundary may go either way).
Exit 1 when any output fails or is missing.
"""
import os
import re
import subprocess
import sys
import tempfile

RNG_OPS = re.compile(r"= (uniform|normal|rand_like|randn_like)\b")


def split_fusions(text):
    """The top-level `fusion @name {...}` blocks of a .fir text: (name, block)."""
    out, cur, name = [], [], None
    for line in text.splitlines(keepends=True):
        m = re.match(r"fusion @([A-Za-z0-9_.]+)", line)
        if m:
            name, cur = m.group(1), [line]
            continue
        if name is not None:
            cur.append(line)
            if line.rstrip() == "}":
                out.append((name, "".join(cur)))
                name = None
    return out


def prepare(build, out, files):
    """Each fusion of `files` as a script with inputs, a lowered file and PTX in `out`."""
    os.makedirs(out, exist_ok=True)
    tr, opt = os.path.join(build, "fuser-translate"), os.path.join(build, "fuser-opt")
    made = skipped = 0
    for path in files:
        stem = os.path.splitext(os.path.basename(path))[0]
        script = None
        if path.endswith(".py"):
            fir = os.path.join(out, stem + ".fir")
            r = subprocess.run([tr, "--from=nvfuser-py", path, "-o", fir], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"skip {stem}: fuser-translate failed: {(r.stderr.strip().splitlines() or ['?'])[0]}")
                skipped += 1
                continue
            parts, script = [(stem, open(fir).read())], open(path).read()
        else:
            blocks = split_fusions(open(path).read())
            parts = [(stem if len(blocks) == 1 else stem + "__" + n, b) for n, b in blocks]
        for case, block in parts:
            if RNG_OPS.search(block):
                print(f"skip {case}: random numbers")
                skipped += 1
                continue
            base = os.path.join(out, case)
            with open(base + ".fir", "w") as f:
                f.write(block)
            if script is not None:
                with open(base + ".py", "w") as f:
                    f.write(script)
            elif subprocess.run([tr, "--to=nvfuser-py", "--with-inputs", base + ".fir", "-o", base + ".py"],
                                capture_output=True).returncode != 0:
                # no example data recorded: nvf_torch.py makes the inputs
                # (symbolic extents: 128), and the run reads them from .npy
                subprocess.run([tr, "--to=nvfuser-py", base + ".fir", "-o", base + ".py"], check=True)
            steps = [[opt, "--pass=all", base + ".fir", "-o", base + ".lowered.fir"],
                     [opt, "--pass=all", "--emit=ptx", base + ".fir", "-o", base + ".ptx"]]
            for cmd in steps:
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    break
            if r.returncode != 0:
                why = (r.stderr.strip().splitlines() or ["?"])[0]
                print(f"skip {case}: {os.path.basename(cmd[0])} failed: {why}")
                skipped += 1
                for ext in (".py", ".lowered.fir", ".ptx"):
                    if os.path.exists(base + ext):
                        os.remove(base + ext)
                continue
            made += 1
    print(f"prepared {made} case(s) in {out}; {skipped} left out")
    return 0


def tolerance(dtype):
    import torch
    return {torch.bfloat16: 1.6e-2, torch.float16: 2e-3}.get(dtype, 1e-5)


def main(argv):
    if len(argv) >= 4 and argv[1] == "prepare":
        return prepare(argv[2], argv[3], argv[4:])
    import numpy as np
    import torch
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    build, pre, nvf_dir, cases = argv[1], argv[2], argv[3], argv[4:]
    sys.path.insert(0, nvf_dir)
    import nvf_torch
    status = 0
    print("| case | output | shape | rel err vs PyTorch | result |")
    print("|---|---|---|---|---|")
    for path in cases:
        name = os.path.splitext(os.path.basename(path))[0]
        fn, inputs, in_names, out_names = nvf_torch.load(path)
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.no_grad():
            ref = fn(*inputs)
        ref = ref if isinstance(ref, (tuple, list)) else (ref,)
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [os.path.join(build, "fuser-run"), os.path.join(pre, name + ".lowered.fir"), "--ptx",
                   os.path.join(pre, name + ".ptx"), "--print-values", "0", "--save-outputs", tmp]
            for n, x in zip(in_names, inputs):
                if isinstance(x, torch.Tensor):
                    f = os.path.join(tmp, "in_" + n + ".npy")
                    np.save(f, x.detach().cpu().contiguous().numpy())
                    cmd += ["--input", f"{n}={f}"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"| {name} | - | - | - | fuser-run failed: {r.stderr.strip().splitlines()[:2]} |")
                status = 1
                continue
            for n, want in zip(out_names, ref):
                f = os.path.join(tmp, n + ".npy")
                if not os.path.exists(f):
                    print(f"| {name} | {n} | - | - | MISSING |")
                    status = 1
                    continue
                got = torch.from_numpy(np.load(f)).cuda()
                want = want.to(got.dtype) if got.dtype != want.dtype else want
                if got.dtype.is_floating_point:
                    den = torch.linalg.vector_norm(want.double()).item() or 1.0
                    err = torch.linalg.vector_norm((got.double() - want.double())).item() / den
                    ok = err < tolerance(got.dtype) and torch.equal(torch.isnan(got), torch.isnan(want))
                    shown = f"{err:.2e}"
                else:
                    ok = torch.equal(got, want)
                    shown = "exact" if ok else "differs"
                status |= 0 if ok else 1
                print(f"| {name} | {n} | {list(got.shape)} | {shown} | {'PASS' if ok else 'FAIL'} |")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
