#!/usr/bin/env python3
"""fuser: bench/matmul side by side with torch (issue 16).

  matmul_bench.py precompile BUILD OUT
      Where LLVM is (no GPU needed): every case of this folder through
      `fuser-opt --pass=all` (OUT/<case>.lowered.fir, OUT/<case>.ptx; a
      matmul-only fusion's PTX is an empty module).

  matmul_bench.py run BUILD OUT [--iters N] [--warmup N] [--peers torch.json]
      On the GPU host: `fuser-run --bench --json` on each case (no --check:
      the CPU reference of an 8192^3 product takes hours; the GPU tests
      check the same calls at smaller sizes), then a Markdown table of
      microseconds and TFLOP/s (the `// flops:` line of each case) beside
      torch.matmul / F.linear (eager) and torch.compile from
      torch_matmul.py run in the same session, and fuser's share of the
      best peer's throughput (the target: >= 95% for the plain products,
      faster than torch.compile for linear + bias + GELU).
"""
import glob
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def meta(path, key):
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*//\s*" + key + r":\s*(.+?)\s*$", line)
            if m:
                return m.group(1)
    return None


def cases():
    return sorted(glob.glob(os.path.join(HERE, "*.fir")))


def precompile(build, out):
    os.makedirs(out, exist_ok=True)
    opt = os.path.join(build, "fuser-opt")
    status = 0
    for path in cases():
        name = os.path.splitext(os.path.basename(path))[0]
        for extra, dst in (([], name + ".lowered.fir"), (["--emit=ptx"], name + ".ptx")):
            r = subprocess.run([opt, "--device=h100", "--pass=all", *extra, path, "-o", os.path.join(out, dst)],
                               capture_output=True, text=True)
            if r.returncode:
                print(f"not compiled: {name}: {r.stderr.strip()}", file=sys.stderr)
                status = 1
        print(f"precompiled {name}")
    return status


def run(build, out, iters, warmup, peer_files):
    peers = {}
    for p in peer_files:
        with open(p) as f:
            for row in json.load(f).get("rows", []):
                peers[row["case"]] = row
    print("| case | fuser us | fuser TFLOP/s | launches | eager us | torch.compile us | fuser / best peer throughput |")
    print("|---|---|---|---|---|---|---|")
    status = 0
    for path in cases():
        name = os.path.splitext(os.path.basename(path))[0]
        cmd = [os.path.join(build, "fuser-run"), os.path.join(out, name + ".lowered.fir"), "--ptx",
               os.path.join(out, name + ".ptx"), "--bench", "--iters", str(iters), "--warmup", str(warmup), "--json",
               "--print-values", "0"]
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        try:
            fz = json.loads(r.stdout)["fusions"][0]
        except (json.JSONDecodeError, KeyError, IndexError):
            print(f"| {name} | fuser-run failed: {r.stderr.strip()[:300]} |")
            status = 1
            continue
        t = fz["bench"]["total"]["median_us"]
        flops = float(meta(path, "flops") or 0)
        launches = ", ".join(k["name"] for k in fz["bench"]["kernels"])
        pr = peers.get(meta(path, "peer") or "", {})
        e, c = pr.get("eager_us"), pr.get("compile_us")
        best = min([x for x in (e, c) if isinstance(x, (int, float))], default=None)
        ratio = f"{best / t * 100:.1f}%" if best else "-"
        fmt = lambda x: f"{x:.1f}" if isinstance(x, (int, float)) else "-"
        print(f"| {name} | {t:.1f} | {flops / t / 1e6:.0f} | {launches} | {fmt(e)} | {fmt(c)} | {ratio} |")
    return status


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="bench/matmul beside torch (see the module's doc)")
    ap.add_argument("step", choices=["precompile", "run"])
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--peers", action="append", default=[], help="torch_matmul.py's JSON (repeatable)")
    a = ap.parse_args(argv[1:])
    if a.step == "precompile":
        return precompile(a.build, a.out)
    return run(a.build, a.out, a.iters, a.warmup, a.peers)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
