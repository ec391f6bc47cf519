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
result near a rounding boundary may go either way).  NaN and infinities
must sit at the same places.  An output past its bound is judged again
against the definition run in f64 (its float inputs widened, its casts
still rounding): it passes when fuser is at least as close to that as
PyTorch is (within twice PyTorch's error), as for a variance of values
with a large mean, or a matmul epilogue that skips the rounding of the
product (docs/passes.md, "Matmul segments"); the row shows both errors.
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


def save_npy(path, x):
    """A tensor as .npy; bf16 (which numpy lacks) as its bit patterns,
    '<u2', which fuser-run reads as bf16."""
    import numpy as np
    import torch
    x = x.detach().cpu().contiguous()
    if x.dtype == torch.bfloat16:
        np.save(path, x.view(torch.int16).numpy().view(np.uint16))
    else:
        np.save(path, x.numpy())


def load_npy(path, like):
    """A .npy that fuser-run wrote, as a tensor on the GPU; '<u2' is bf16
    when the reference output is."""
    import numpy as np
    import torch
    a = np.load(path)
    if a.dtype == np.uint16:  # fuser has no u16: these are bf16 bit patterns
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(a).cuda()


def rel_err(got, want):
    """||got - want|| / ||want|| over the places both are finite, and
    whether NaN and infinities sit at the same places (same signs)."""
    import torch
    fin = torch.isfinite(got) & torch.isfinite(want)
    inf = torch.isinf(got)
    same_special = torch.equal(torch.isnan(got), torch.isnan(want)) and \
        torch.equal(inf, torch.isinf(want)) and torch.equal(got[inf], want[inf])
    g, w = got[fin].double(), want[fin].double()
    den = torch.linalg.vector_norm(w).item() or 1.0
    return torch.linalg.vector_norm(g - w).item() / den, same_special


def f64_reference(fn, inputs):
    """The definition run again with its float inputs in f64 (the casts it
    spells still round), or None where that does not run."""
    import torch
    try:
        with torch.no_grad():
            r = fn(*[x.double() if isinstance(x, torch.Tensor) and x.dtype.is_floating_point else
                     x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
        return r if isinstance(r, (tuple, list)) else (r,)
    except Exception:
        return None


def check_case(build, pre, nvf_torch, path, name):
    """One case: its inputs saved first (an aliased output updates its
    input in place), the PyTorch reference, then fuser-run on the same
    inputs; a table row per output.  Returns 1 on any failure."""
    import torch
    status = 0
    fn, inputs, in_names, out_names = nvf_torch.load(path)
    random = set(nvf_torch.random_outputs(path))
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in inputs]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [os.path.join(build, "fuser-run"), os.path.join(pre, name + ".lowered.fir"), "--ptx",
               os.path.join(pre, name + ".ptx"), "--print-values", "0", "--save-outputs", tmp]
        for n, x in zip(in_names, inputs):
            if isinstance(x, torch.Tensor):
                f = os.path.join(tmp, "in_" + n + ".npy")
                save_npy(f, x)
                cmd += ["--input", f"{n}={f}"]
        with torch.no_grad():
            ref = fn(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
        ref = ref if isinstance(ref, (tuple, list)) else (ref,)
        ref64 = f64_reference(fn, inputs)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"| {name} | - | - | - | fuser-run failed: {r.stderr.strip().splitlines()[:2]} |")
            return 1
        for n, want in zip(out_names, ref):
            if n in random:
                print(f"| {name} | {n} | - | - | skipped: random numbers |")
                continue
            f = os.path.join(tmp, n + ".npy")
            if not os.path.exists(f):
                print(f"| {name} | {n} | - | - | MISSING |")
                status = 1
                continue
            got = load_npy(f, want)
            want = want.to(got.dtype) if got.dtype != want.dtype else want
            if got.dtype.is_floating_point:
                err, same_special = rel_err(got, want)
                ok = err < tolerance(got.dtype) and same_special
                shown = f"{err:.2e}" + ("" if same_special else " (NaN/inf differ)")
                r64 = ref64[out_names.index(n)] if ref64 is not None else None
                if not ok and same_special and r64 is not None and r64.shape == got.shape:
                    # both against the definition run in f64: fuser passes
                    # when it is as close to that as PyTorch is (a variance
                    # of a large mean, a rounding an epilogue skips)
                    ef, _ = rel_err(got, r64)
                    et, _ = rel_err(want, r64)
                    ok = ef <= max(tolerance(got.dtype), 2 * et)
                    shown += f" (vs f64: fuser {ef:.1e}, torch {et:.1e})"
            else:
                ok = torch.equal(got, want)
                shown = "exact" if ok else "differs"
            status |= 0 if ok else 1
            print(f"| {name} | {n} | {list(got.shape)} | {shown} | {'PASS' if ok else 'FAIL'} |")
    return status


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
        try:
            status |= check_case(build, pre, nvf_torch, path, name)
        except Exception as e:  # one case's trouble is its own row, not the end of the run
            print(f"| {name} | - | - | - | ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} |")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
