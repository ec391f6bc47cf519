#!/usr/bin/env python3
"""fuser: writes the GPU cases of group norm, batch norm and the weight gradients of the
backward norms, test/gpu/norm_*.fir.

    python3 test/gpu/gen_norm_outer.py [OUT_DIR]      (default: this folder)

  norm_groupnorm.fir    group norm as frameworks emit it: [N, C, H, W] reshaped to
                        [N, G, C/G, H, W] (or [N, G, C/G*H*W]), var_mean over the
                        trailing dims, reshaped back, per-channel weight and bias; the
                        mean and rstd [N, G] as outputs: one inner persistent kernel;
  norm_batchnorm.fir    batch norm forward in training mode: var_mean over (N, H, W),
                        the normalized tensor, the saved mean and rstd and the running
                        statistics updated (momentum 0.1, the unbiased variance), for
                        NCHW (a persistent kernel whose row gathers N runs of H * W, or a
                        reduction and a pointwise kernel past the on-chip limit), NHWC
                        and NCHW stored channels-last (a reduction kernel and a
                        pointwise kernel);
  norm_bwd_weights.fir  layer norm and RMS norm backward with dgamma and dbeta (sums
                        over the rows) beside dx: a persistent kernel for dx and an
                        outer reduction kernel for the weight gradients;
  norm_bwd_inner_outer.fir  the same with rows enough for the schedule pass's inner-outer
                        rewrite (2112 or more on an H100, 128 on lit's small device): the
                        weight gradients as partial sums of the persistent kernel's row
                        loop, and a small reduction kernel over the parts.
Each in f32, bf16 and f16 (f32 compute), with symbolic sizes too, small enough for the CPU kernel path
(lit/run/norm-outer-kir.test runs them all). Rerun after changing it and commit the files.
"""
import os
import sys

DTYPES = ("f32", "bf16", "f16")


class Fusion:
    """Text of one fusion, f32 compute over inputs of dtype `dt`."""

    def __init__(self, name, dt, seed, sym=None):
        self.name, self.dt, self.seed = name, dt, seed
        self.lines, self.outs, self.k = [], [], 0
        self.sym = sym or {}  # constant extent -> symbol written in its place (its example size)

    def tmp(self):
        self.k += 1
        return "%%t%d" % self.k

    def input(self, nm, dims, attrs="", dt=None):
        self.seed += 1
        dt = dt or self.dt
        extra = ", " + attrs if attrs else ""
        if any(d in self.sym for d in dims):
            extra += ", example_shape=%s" % shape(dims)
        self.lines.append("  %%%s = input %s%s {example=randn, seed=%d%s}" % (nm, dt, self.shape(dims), self.seed, extra))
        if dt == "f32":
            return "%" + nm
        return self.op("cast %%%s" % nm, "f32" + shape(dims))

    def shape(self, dims):
        return shape([self.sym.get(d, d) for d in dims])

    def op(self, text, typ=None):
        t = self.tmp()
        if typ:  # result types name the symbols too
            typ = typ[:typ.index("[")] + self.shape([int(d) for d in typ[typ.index("[") + 1:-1].split(", ")])
        self.lines.append("  %s = %s%s" % (t, text, " : " + typ if typ else ""))
        return t

    def ops2(self, text):
        a, b = self.tmp(), self.tmp()
        self.lines.append("  %s, %s = %s" % (a, b, text))
        return a, b

    def out(self, v, dims, keep_f32=False):
        if self.dt != "f32" and not keep_f32:
            v = self.op("cast %s" % v, "%s%s" % (self.dt, shape(dims)))
        self.outs.append(v)

    def text(self, comment):
        return "// %s\nfusion @%s {\n%s\n  output %s\n}\n" % (comment, self.name, "\n".join(self.lines),
                                                             ", ".join(self.outs))


def shape(dims):
    return "[" + ", ".join(str(d) for d in dims) + "]"


def bcast(f, v, dims, keep):
    """v broadcast to `dims`, keeping the dims where keep[d] (the others are 1)."""
    flags = ", ".join("false" if k else "true" for k in keep)
    return f.op("broadcast %s {is_broadcast_dim=[%s]}" % (v, flags), "f32" + shape([d if k else 1 for d, k in zip(dims, keep)]))


def groupnorm(f, n, c, h, w, g, flat):
    dims = (n, c, h, w)
    x = f.input("X", dims)
    wt = f.input("W", (c,))
    b = f.input("B", (c,))
    if flat:
        gd, axes = (n, g, c // g * h * w), "[2]"
    else:
        gd, axes = (n, g, c // g, h, w), "[2, 3, 4]"
    v = f.op("reshape %s" % x, "f32" + shape(gd))
    var, mean = f.ops2("var_mean %s {axes=%s, correction=0}" % (v, axes))
    r = f.op("rsqrt %s" % f.op("add %s, 1e-05" % var))
    keep = [True, True] + [False] * (len(gd) - 2)
    y = f.op("mul %s, %s" % (f.op("sub %s, %s" % (v, bcast(f, mean, gd, keep))), bcast(f, r, gd, keep)))
    y = f.op("reshape %s" % y, "f32" + shape(dims))
    chan = [False, True, False, False]
    y = f.op("add %s, %s" % (f.op("mul %s, %s" % (y, bcast(f, wt, dims, chan))), bcast(f, b, dims, chan)))
    f.out(y, dims)
    f.out(mean, (n, g), keep_f32=True)
    f.out(r, (n, g), keep_f32=True)


def batchnorm(f, dims, chan_dim, attrs=""):
    """Training-mode batch norm of X (channel dim `chan_dim`), statistics over the rest."""
    c = dims[chan_dim]
    x = f.input("X", dims, attrs)
    wt = f.input("W", (c,))
    b = f.input("B", (c,))
    rm = f.input("RM", (c,), dt="f32")
    rv = f.input("RV", (c,), dt="f32")
    axes = [d for d in range(len(dims)) if d != chan_dim]
    count = 1
    for d in axes:
        count *= dims[d]
    var, mean = f.ops2("var_mean %s {axes=[%s], correction=0}" % (x, ", ".join(map(str, axes))))
    r = f.op("rsqrt %s" % f.op("add %s, 1e-05" % var))
    keep = [d == chan_dim for d in range(len(dims))]
    y = f.op("mul %s, %s" % (f.op("sub %s, %s" % (x, bcast(f, mean, dims, keep))), bcast(f, r, dims, keep)))
    y = f.op("add %s, %s" % (f.op("mul %s, %s" % (y, bcast(f, wt, dims, keep))), bcast(f, b, dims, keep)))
    f.out(y, dims)
    f.out(mean, (c,), keep_f32=True)
    f.out(r, (c,), keep_f32=True)
    # running statistics: (1 - m) * running + m * batch (the unbiased variance)
    f.outs.append(f.op("add %s, %s" % (f.op("mul %s, 0.9" % rm), f.op("mul %s, 0.1" % mean))))
    unbiased = f.op("mul %s, %r" % (var, count / (count - 1.0) if count > 1 else 1.0))
    f.outs.append(f.op("add %s, %s" % (f.op("mul %s, 0.9" % rv), f.op("mul %s, 0.1" % unbiased))))


def row_stat(f, nm, m):
    # a per-row statistic saved by the forward pass (f32)
    f.input(nm, (m,), dt="f32")
    return bcast(f, "%" + nm, (m, 1), [True, False])


def layernorm_bwd(f, m, n):
    # dx = r * (g - mean(g) - xh * mean(g * xh)), xh = (x - mean) * r, g = dy * w;
    # dgamma = sum over rows of dy * xh, dbeta = sum over rows of dy
    dy = f.input("DY", (m, n))
    x = f.input("X", (m, n))
    w = f.input("W", (n,))
    mean = row_stat(f, "MEAN", m)
    r = row_stat(f, "RSTD", m)
    g = f.op("mul %s, %s" % (dy, bcast(f, w, (m, n), [False, True])))
    xh = f.op("mul %s, %s" % (f.op("sub %s, %s" % (x, mean)), r))
    s1 = f.op("sum %s {axes=[1], keepdim=true}" % g, "f32[%s, 1]" % m)
    s2 = f.op("sum %s {axes=[1], keepdim=true}" % f.op("mul %s, %s" % (g, xh)), "f32[%s, 1]" % m)
    m1 = f.op("div %s, %s" % (s1, float(n)))
    m2 = f.op("div %s, %s" % (s2, float(n)))
    t = f.op("sub %s, %s" % (f.op("sub %s, %s" % (g, m1)), f.op("mul %s, %s" % (xh, m2))))
    f.out(f.op("mul %s, %s" % (t, r)), (m, n))
    f.out(f.op("sum %s {axes=[0]}" % f.op("mul %s, %s" % (dy, xh)), "f32[%s]" % n), (n,))
    f.out(f.op("sum %s {axes=[0]}" % dy, "f32[%s]" % n), (n,))


def rmsnorm_bwd(f, m, n):
    # dx = r * g - x * r^3 * sum(g * x) / n, g = dy * w; dgamma = sum over rows of dy * x * r
    dy = f.input("DY", (m, n))
    x = f.input("X", (m, n))
    w = f.input("W", (n,))
    r = row_stat(f, "RSTD", m)
    g = f.op("mul %s, %s" % (dy, bcast(f, w, (m, n), [False, True])))
    s = f.op("sum %s {axes=[1], keepdim=true}" % f.op("mul %s, %s" % (g, x)), "f32[%s, 1]" % m)
    r3 = f.op("mul %s, %s" % (f.op("mul %s, %s" % (r, r)), r))
    c = f.op("div %s, %s" % (f.op("mul %s, %s" % (s, r3)), float(n)))
    f.out(f.op("sub %s, %s" % (f.op("mul %s, %s" % (g, r)), f.op("mul %s, %s" % (x, c)))), (m, n))
    f.out(f.op("sum %s {axes=[0]}" % f.op("mul %s, %s" % (dy, f.op("mul %s, %s" % (x, r)))), "f32[%s]" % n), (n,))


GROUPNORM = [((2, 8, 5, 5, 4), False), ((3, 6, 7, 7, 3), False), ((2, 32, 9, 9, 8), False),
             ((2, 64, 8, 8, 32), True), ((1, 8, 32, 33, 2), False)]
# (dims, channel dim, layout attributes): NCHW, NHWC, NCHW stored channels-last
BATCHNORM = [((4, 3, 5, 5), 1, ""), ((8, 16, 7, 7), 1, ""), ((2, 4, 33, 33), 1, ""), ((16, 2, 64, 65), 1, ""),
             ((4, 5, 5, 3), 3, ""), ((8, 7, 7, 16), 3, ""), ((2, 9, 9, 32), 3, ""), ((2, 33, 33, 4), 3, ""),
             ((4, 3, 5, 5), 1, "stride_order=[3, 0, 2, 1]"), ((8, 16, 7, 7), 1, "stride_order=[3, 0, 2, 1]")]
BWD = [(37, 33), (64, 256), (5, 1000), (257, 64), (7, 4099)]
# symbolic sizes: the example extent each symbol stands for (no other dim of the case has it)
GROUPNORM_SYM = [((3, 8, 5, 5, 4), {3: "N"}), ((3, 8, 5, 5, 4), {3: "N", 5: "H"})]
BATCHNORM_SYM = [((8, 16, 7, 7), 1, {8: "N", 7: "H"}), ((8, 7, 7, 16), 3, {8: "N", 7: "H"})]
BWD_SYM = [((37, 33), {37: "M", 33: "N"})]
# inner-outer: prime row counts (the row loop's guarded tail), a row of 1000 (4-element f32 vectors)
BWD_IO = [(2203, 1024), (2311, 1000)]
BWD_IO_SYM = [((2203, 1024), {2203: "M"})]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    head = "// Generated by test/gpu/gen_norm_outer.py: do not edit; rerun it.\n"
    seed, sseed = 9000, 20000  # the symbolic cases' seeds apart: adding one leaves the others' data as it was
    files = {"groupnorm": [], "batchnorm": [], "bwd_weights": [], "bwd_inner_outer": []}
    ioseed = 40000  # a range of their own: the other files' data stays as it was
    for dt in DTYPES:
        for (n, c, h, w, g), flat in GROUPNORM:
            f = Fusion("groupnorm_%s_%dx%dx%dx%d_g%d%s" % (dt, n, c, h, w, g, "_flat" if flat else ""), dt, seed)
            groupnorm(f, n, c, h, w, g, flat)
            files["groupnorm"].append(f.text("group norm, %d groups, viewed as [N, G, %s]" %
                                             (g, "C/G*H*W" if flat else "C/G, H, W")))
            seed += 10
        for (n, c, h, w, g), sym in GROUPNORM_SYM:
            f = Fusion("groupnorm_%s_sym_%s" % (dt, "".join(sorted(sym.values()))), dt, sseed, sym)
            groupnorm(f, n, c, h, w, g, False)
            files["groupnorm"].append(f.text("group norm, symbolic %s (example %dx%dx%dx%d)" %
                                             (", ".join(sorted(sym.values())), n, c, h, w)))
            sseed += 10
        for dims, cd, attrs in BATCHNORM:
            lay = "nchw" if cd == 1 and not attrs else "nhwc" if cd == 3 else "cl"
            f = Fusion("batchnorm_%s_%s_%s" % (lay, dt, "x".join(map(str, dims))), dt, seed)
            batchnorm(f, dims, cd, attrs)
            what = {"nchw": "NCHW", "nhwc": "NHWC", "cl": "NCHW stored channels-last"}[lay]
            files["batchnorm"].append(f.text("batch norm forward (training), %s" % what))
            seed += 10
        for dims, cd, sym in BATCHNORM_SYM:
            lay = "nchw" if cd == 1 else "nhwc"
            f = Fusion("batchnorm_%s_%s_sym" % (lay, dt), dt, sseed, sym)
            batchnorm(f, dims, cd)
            files["batchnorm"].append(f.text("batch norm forward (training), %s, symbolic N and H = W (example %s)" %
                                             (lay.upper(), "x".join(map(str, dims)))))
            sseed += 10
        for m, n in BWD:
            for nm, fn in (("layernorm", layernorm_bwd), ("rmsnorm", rmsnorm_bwd)):
                f = Fusion("%s_bwd_%s_%dx%d" % (nm, dt, m, n), dt, seed)
                fn(f, m, n)
                files["bwd_weights"].append(f.text("%s backward: dx and the weight gradients" % nm))
                seed += 10
        for (m, n), sym in BWD_SYM:
            for nm, fn in (("layernorm", layernorm_bwd), ("rmsnorm", rmsnorm_bwd)):
                f = Fusion("%s_bwd_%s_sym" % (nm, dt), dt, sseed, sym)
                fn(f, m, n)
                files["bwd_weights"].append(f.text("%s backward, symbolic [M, N] (example %dx%d)" % (nm, m, n)))
                sseed += 10
        for (m, n), sym in [(c, None) for c in BWD_IO] + BWD_IO_SYM:
            for nm, fn in (("layernorm", layernorm_bwd), ("rmsnorm", rmsnorm_bwd)):
                f = Fusion("%s_bwd_io_%s_%s" % (nm, dt, "sym" if sym else "%dx%d" % (m, n)), dt, ioseed, sym)
                fn(f, m, n)
                files["bwd_inner_outer"].append(f.text("%s backward, weight gradients as partial sums%s" %
                                                       (nm, ", symbolic M (example %d)" % m if sym else "")))
                ioseed += 10
    for k, body in files.items():
        with open(os.path.join(out, "norm_%s.fir" % k), "w") as fh:
            fh.write(head + "".join(body))


if __name__ == "__main__":
    main()
