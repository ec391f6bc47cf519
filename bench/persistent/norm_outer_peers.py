"""fuser: eager and torch.compile on the outer-normalization benchmark cases (bench/persistent/
batchnorm_*, groupnorm_*, *_bwd_*), timed as ../shared/bench/peer_targets.py times its cases
(L2 flushed, the GPU kept busy while Python dispatches, CUDA events, median). Run on the GPU host:

    python3 bench/persistent/norm_outer_peers.py OUT.json

CASES=a,b (environment) keeps the cases whose name starts with one of them.

Each row's `case` is the `// peer:` name of its .fir, so `kernel_bench.py run --peers OUT.json`
puts the columns beside fuser's.
"""
import json, os, statistics, sys, torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_timing  # noqa: E402  (bench/torch_timing.py)

D = "cuda"; ITERS = int(os.environ.get("ITERS", 100)); bf = torch.bfloat16
flush = torch_timing.flush_buffer()


def timed(fn, args, iters=ITERS, warm=5):
    return statistics.median(torch_timing.event_times_us(lambda: fn(*args), iters, warm, flush))


def r(*s, dt=torch.float32): return torch.randn(*s, device=D, dtype=dt)


def batchnorm(x, w, b, rm, rv, nhwc):
    # training mode: the saved mean and rstd and the updated running statistics, as the fusions return
    xf = x.float().permute(0, 3, 1, 2) if nhwc else x.float()
    y = torch.nn.functional.batch_norm(xf, rm, rv, w.float(), b.float(), True, 0.1, 1e-5)
    return (y.permute(0, 2, 3, 1) if nhwc else y).to(x.dtype)


def groupnorm(x, w, b, g): return torch.nn.functional.group_norm(x.float(), g, w.float(), b.float(), 1e-5).to(x.dtype)


def layernorm_bwd(dy, x, w, mean, rstd):
    dyf, xh = dy.float(), (x.float() - mean[:, None]) * rstd[:, None]
    g = dyf * w.float(); n = x.shape[-1]
    dx = rstd[:, None] * (g - g.sum(-1, keepdim=True) / n - xh * (g * xh).sum(-1, keepdim=True) / n)
    return dx.to(x.dtype), (dyf * xh).sum(0).to(x.dtype), dyf.sum(0).to(x.dtype)


def rmsnorm_bwd(dy, x, w, rstd):
    dyf, xf = dy.float(), x.float(); g = dyf * w.float(); n = x.shape[-1]; r3 = rstd[:, None] ** 3
    dx = g * rstd[:, None] - xf * r3 * (g * xf).sum(-1, keepdim=True) / n
    return dx.to(x.dtype), (dyf * xf * rstd[:, None]).sum(0).to(x.dtype)


C = []
for dt, dn in ((bf, "bf16"), (torch.float32, "f32")):
    for n, c, h, w in ((256, 64, 56, 56), (32, 64, 28, 28)):
        for nhwc in (False, True):
            shp = (n, h, w, c) if nhwc else (n, c, h, w)
            name = "batchnorm_%s %s[%s]" % ("nhwc" if nhwc else "nchw", dn, ",".join(map(str, shp)))
            C.append((name, lambda *a, nhwc=nhwc: batchnorm(*a, nhwc),
                      (r(*shp, dt=dt), r(c, dt=dt), r(c, dt=dt), r(c), r(c).abs())))
for n, c, h, w, g in ((32, 256, 28, 28, 32), (2, 320, 64, 64, 32)):
    C.append(("groupnorm bf16[%d,%d,%d,%d] G=%d" % (n, c, h, w, g), lambda x, wt, b, g=g: groupnorm(x, wt, b, g),
              (r(n, c, h, w, dt=bf), r(c, dt=bf), r(c, dt=bf))))
m, n = 16384, 4096
C.append(("layernorm_bwd bf16[16384,4096]", layernorm_bwd, (r(m, n, dt=bf), r(m, n, dt=bf), r(n, dt=bf), r(m), r(m))))
C.append(("rmsnorm_bwd bf16[16384,4096]", rmsnorm_bwd, (r(m, n, dt=bf), r(m, n, dt=bf), r(n, dt=bf), r(m))))

SEL = [s for s in os.environ.get("CASES", "").split(",") if s]
rows = []
for name, fn, args in C:
    if SEL and not any(name.startswith(s) for s in SEL):
        continue
    te = timed(fn, args)
    torch._dynamo.reset(); cf = torch.compile(fn, dynamic=False); cf(*args); torch.cuda.synchronize()
    tc = timed(cf, args)
    rows.append(dict(case=name, eager_us=te, compile_us=tc))
    print("| %s | %.1f | %.1f |" % (name, te, tc), flush=True)
json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), open(sys.argv[1], "w"), indent=1)
