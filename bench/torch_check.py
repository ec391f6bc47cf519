#!/usr/bin/env python3
"""fuser's GPU outputs against PyTorch: an independent check of the kernels.

  torch_check.py BUILD PRECOMPILED NVF_TORCH_DIR CASE.py...

On the GPU host: each CASE (an nvFuser definition, precompiled here by
kernel_bench.py into PRECOMPILED/<case>.lowered.fir and .ptx) is run twice
on the same inputs: by PyTorch, through nvf_torch.py (in NVF_TORCH_DIR: it
executes the definition with torch ops, following nvFuser's semantics), and
by fuser-run on the GPU (--input NAME=FILE.npy, --save-outputs).  Each output
is compared by ||fuser - torch|| / ||torch|| (float outputs) or exactly
(integer and bool outputs); a relative error under 1e-5 passes for f32.
Exit 1 when any output fails or is missing.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch


def main(argv):
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
                    ok = err < 1e-5 and not torch.isnan(got).any().item()
                    shown = f"{err:.2e}"
                else:
                    ok = torch.equal(got, want)
                    shown = "exact" if ok else "differs"
                status |= 0 if ok else 1
                print(f"| {name} | {n} | {list(got.shape)} | {shown} | {'PASS' if ok else 'FAIL'} |")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
