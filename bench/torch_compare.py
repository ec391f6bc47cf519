#!/usr/bin/env python3
"""PyTorch eager and torch.compile on the fusions fuser benchmarks, timed the
way fuser-run --bench times its kernels, so the numbers compare side by side:

  * the same fusion and sizes (seed001's erf-GELU on f32[8192, 3072], with
    the bookend views and without them);
  * CUDA events around each run, L2 flushed before each run by writing a
    buffer of twice its size, median of >= 100 timed runs after a warm-up;
  * effective bandwidth = (input bytes read once + output bytes written
    once) / median time, and the device-to-device copy bandwidth (bytes read
    + written) measured in the same process.

  python3 bench/torch_compare.py [--iters 100] [--warmup 10] [--json OUT.json]
                                 [--fuser-json F.json ...] [--no-compile]

With --fuser-json (fuser-run --bench --json output, one file per case, named
by the case: gelu_bookend.json, gelu_noviews.json), fuser's medians join the
table.  Prints a Markdown section to paste into docs/performance.md.
"""
import argparse
import datetime
import json
import os
import statistics
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iters", type=int, default=100, help="timed runs (at least 100 for reported numbers)")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--rows", type=int, default=8192)
    p.add_argument("--cols", type=int, default=3072)
    p.add_argument("--copy-mib", type=int, default=1024, help="size of the copy-bandwidth measurement")
    p.add_argument("--json", help="also write the results as JSON here")
    p.add_argument("--fuser-json", action="append", default=[],
                   help="fuser-run --bench --json output of a case (file name: <case>.json)")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--compile-mode", default=None, help="torch.compile mode (default: its default)")
    return p.parse_args()


def main():
    args = parse_args()
    try:
        import torch
        import torch_timing  # bench/torch_timing.py, beside this script
    except ImportError:
        print("torch_compare: PyTorch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_compare: no CUDA device: skipped", file=sys.stderr)
        return 77
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 0) or (64 << 20)
    flush = torch_timing.flush_buffer(2 * l2)

    def timed(fn, x, iters, warmup, flush_l2=True):
        times = torch_timing.event_times_us(lambda: fn(x), iters, warmup, flush if flush_l2 else None)
        return statistics.median(times), min(times), max(times)

    # Copy roofline: bytes read + written per second.
    n_copy = (args.copy_mib << 20) // 4
    src = torch.empty(n_copy, dtype=torch.float32, device=dev).fill_(1.0)
    dst = torch.empty_like(src)
    copy_us, _, _ = timed(lambda s: dst.copy_(s), src, 20, 2, flush_l2=False)
    copy_gbs = 2 * src.numel() * 4 / (copy_us * 1e-6) / 1e9
    del src, dst

    rows, cols = args.rows, args.cols
    assert rows % 128 == 0, "the bookend view splits rows into [rows/128, 128]"

    def gelu(t):
        return (t * 0.5) * (torch.erf(t * 0.707107) + 1.0)

    def gelu_bookend(x):  # seed001: view -> GELU -> view
        t1 = x.view(rows // 128, 128, cols)
        return gelu(t1).view(rows, cols)

    cases = {"gelu_bookend": gelu_bookend, "gelu_noviews": gelu}
    x = torch.randn(rows, cols, device=dev, dtype=torch.float32)
    nbytes = 2 * x.numel() * x.element_size()
    results = {}
    for name, fn in cases.items():
        r = {"bytes": nbytes}
        r["eager_us"], r["eager_min_us"], r["eager_max_us"] = timed(fn, x, args.iters, args.warmup)
        if not args.no_compile:
            kw = {"mode": args.compile_mode} if args.compile_mode else {}
            cfn = torch.compile(fn, **kw)
            cfn(x)  # compile outside the timing
            r["compile_us"], r["compile_min_us"], r["compile_max_us"] = timed(cfn, x, args.iters, args.warmup)
            ref = fn(x)
            out = cfn(x)
            r["compile_max_abs_diff"] = float((out - ref).abs().max())
        results[name] = r

    fuser = {}
    for path in args.fuser_json:
        case = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            data = json.load(f)
        fz = data["fusions"][0]
        b = fz.get("bench")
        if not b:
            print(f"torch_compare: {path} has no bench results (run fuser-run --bench --json)", file=sys.stderr)
            continue
        fuser[case] = {
            "kernels": len(b["kernels"]),
            "us": b["total"]["median_us"],
            "gbs": b["total"]["gbs"],
            "pct_copy": b["total"]["pct_copy"],
            "copy_gbs": b["copy_gbs"],
            "check": fz.get("check_pass"),
        }

    today = datetime.date.today().isoformat()
    print(f"## seed001 GELU f32[{rows}, {cols}]: fuser vs PyTorch\n")
    print(f"- Date: {today}; device: {props.name} ({props.multi_processor_count} SMs, "
          f"L2 {l2 / 2**20:.0f} MiB); PyTorch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"- Method: CUDA events, L2 flushed before each run ({2 * l2 / 2**20:.0f} MiB written), "
          f"median of {args.iters} runs after {args.warmup} warm-up; effective bandwidth = "
          f"(input + output bytes) / time = {nbytes / 1e6:.1f} MB / time")
    print(f"- Copy roofline (PyTorch copy_ of {args.copy_mib} MiB, read + write): {copy_gbs:.0f} GB/s"
          + ("".join(f"; fuser-run measured {v['copy_gbs']:.0f} GB/s" for v in list(fuser.values())[:1])))
    print(f"- Command: `bench/gpu_bench.sh BUILD_DIR` (fuser) and `python3 bench/torch_compare.py` (PyTorch)\n")
    print("| case | fuser kernels | fuser us | fuser GB/s | fuser % of copy | eager us | torch.compile us "
          "| floor us at copy speed |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        floor = nbytes / (copy_gbs * 1e9) * 1e6
        fz = fuser.get(name)
        fcols = (f"{fz['kernels']} | {fz['us']:.1f} | {fz['gbs']:.0f} | {fz['pct_copy']:.1f}%"
                 if fz else "- | - | - | -")
        comp = f"{r['compile_us']:.1f}" if "compile_us" in r else "-"
        print(f"| {name} | {fcols} | {r['eager_us']:.1f} | {comp} | {floor:.1f} |")
    for name, fz in fuser.items():
        if fz.get("check") is False:
            print(f"\nWARNING: fuser's --check FAILED for {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": props.name, "torch": torch.__version__, "copy_gbs": copy_gbs,
                       "l2_bytes": l2, "iters": args.iters, "torch_results": results, "fuser": fuser}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
