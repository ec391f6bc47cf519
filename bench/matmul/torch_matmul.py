#!/usr/bin/env python3
"""fuser: the peers of bench/matmul on the GPU: torch.matmul, F.linear and
torch.compile of linear + bias + GELU (tanh), timed like fuser-run --bench
(CUDA events around each call, L2 flushed before each run, median of ITERS
after WARMUP).  Writes JSON rows {case, eager_us, compile_us} (the format
of ../shared/bench/peer_targets.py, which matmul_bench.py reads).

    python3 torch_matmul.py OUT.json [ITERS] [WARMUP]
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_timing  # noqa: E402  (bench/torch_timing.py)


def timed(fn, iters, warmup):
    """bench/torch_timing.py's loop with no GPU spin (a matmul's launch is not the cost here)."""
    times = sorted(torch_timing.event_times_us(fn, iters, warmup, torch_timing.flush_buffer(), spin_cycles=0))
    return times[len(times) // 2]


def gelu_tanh(y):
    return F.gelu(y.float(), approximate="tanh").to(y.dtype)


def main(argv):
    out = argv[1]
    iters = int(argv[2]) if len(argv) > 2 else 100
    warmup = int(argv[3]) if len(argv) > 3 else 10
    torch.manual_seed(0)
    bf = dict(dtype=torch.bfloat16, device="cuda")
    rows = []
    A, B = torch.randn(8192, 8192, **bf), torch.randn(8192, 8192, **bf)
    mm_c = torch.compile(lambda a, b: torch.matmul(a, b))
    rows.append(dict(case="matmul bf16[8192,8192]x[8192,8192]", eager_us=timed(lambda: torch.matmul(A, B), iters, warmup),
                     compile_us=timed(lambda: mm_c(A, B), iters, warmup), flops=2 * 8192 ** 3))
    del A, B
    x, w, b = torch.randn(4096, 4096, **bf), torch.randn(11008, 4096, **bf), torch.randn(11008, **bf)
    lin_c = torch.compile(lambda x, w: F.linear(x, w))
    rows.append(dict(case="linear bf16[4096,4096]x[11008,4096]", eager_us=timed(lambda: F.linear(x, w), iters, warmup),
                     compile_us=timed(lambda: lin_c(x, w), iters, warmup), flops=2 * 4096 * 4096 * 11008))
    lbg = lambda x, w, b: gelu_tanh(F.linear(x, w, b))
    lbg_c = torch.compile(lbg)
    rows.append(dict(case="linear_bias_gelu bf16[4096,4096]x[11008,4096]",
                     eager_us=timed(lambda: lbg(x, w, b), iters, warmup),
                     compile_us=timed(lambda: lbg_c(x, w, b), iters, warmup), flops=2 * 4096 * 4096 * 11008))
    meta = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, iters=iters, warmup=warmup)
    with open(out, "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    for r in rows:
        print(f"{r['case']}: eager {r['eager_us']:.1f} us ({r['flops'] / r['eager_us'] / 1e6:.0f} TFLOP/s), "
              f"torch.compile {r['compile_us']:.1f} us ({r['flops'] / r['compile_us'] / 1e6:.0f} TFLOP/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
