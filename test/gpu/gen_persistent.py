#!/usr/bin/env python3
"""fuser: writes the persistent (normalization) GPU cases, test/gpu/persistent_*.fir.

    python3 test/gpu/gen_persistent.py [OUT_DIR]      (default: this folder)

One file per pattern (the forward normalizations, and the inner parts of
softmax, RMS norm and layer norm backward: dx), each fusion one dtype (f32, bf16, f16: half types
cast to f32 for compute and back) and one row length:
  persistent_<pattern>.fir        rows of 1, 3, 7, 33, 256, 1000, 4099 and a
                                  symbolic [M, N] (7 x 4099 by example):
                                  the GPU runs them, and so does the CPU
                                  kernel path (lit/run/persistent-kir.test);
  persistent_large.fir            rows of 32768 (registers; shared memory for
                                  two-input patterns) and 1048576 (longer than
                                  the segmenter keeps on chip: a reduction
                                  kernel and a pointwise kernel): GPU only;
  persistent_smem.fir             rows of 65536 and an odd 40961 (2 rows
                                  each): persist=smem on the H100 (bf16 and
                                  f16 rows of 65536, every dtype at 40961),
                                  persist=reread where the row does not fit
                                  a block's shared memory (f32 at 65536); the
                                  GPU runs them, and so does the CPU kernel
                                  path (lit/run/persistent-smem-kir.test);
  persistent_symbolic_long.fir    unbound [2, N] rows, run with N = 1048576 on
                                  the GPU: persist=reread at a length known
                                  only at run time;
  persistent_widths.fir           rows of models' widths that are not a
                                  power of two (1216, 1280, 1536, 1600,
                                  3072, 4544, 5120, 12288), which the
                                  scheduler splits exactly over 64 to 1024
                                  threads, in narrower vectors where the
                                  widest do not split, or over the threads
                                  that idle fewest vector slots where no
                                  width splits; 5 or 3 rows (not a
                                  multiple of a block's rows: the row guard
                                  of each pass); the GPU runs them, and so
                                  does the CPU kernel path
                                  (lit/run/persistent-widths-kir.test).
Rerun it after changing it and commit the files it writes.
"""
import os
import sys

DTYPES = ("f32", "bf16", "f16")
SMALL = (1, 3, 7, 33, 256, 1000, 4099)
LARGE = (32768, 1048576)
SMEM = (65536, 40961)
WIDTHS = (1216, 1280, 1536, 1600, 3072, 4544, 5120, 12288)


def rows_for(n):
    return 37 if n <= 256 else 5 if n <= 4099 else 3 if n <= 65536 else 2


class Fusion:
    """Text of one fusion, with f32 compute over inputs of dtype `dt`."""

    def __init__(self, name, dt, m, n, seed):
        self.dt, self.m, self.n, self.seed = dt, m, n, seed
        self.lines = []
        self.outs = []
        self.name = name
        self.k = 0
        self.unbound = False  # inputs without example data (sizes from the run)

    def shape(self, *dims):
        return "[" + ", ".join(str(d) for d in dims) + "]"

    def row(self):
        return self.shape(self.m, self.n)

    def tmp(self):
        self.k += 1
        return "%%t%d" % self.k

    def input(self, nm, dims, example):
        self.seed += 1
        ex = ", example_shape=%s" % example if example else ""
        attrs = "" if self.unbound else " {example=randn%s, seed=%d}" % (ex, self.seed)
        self.lines.append("  %%%s = input %s%s%s" % (nm, self.dt, self.shape(*dims), attrs))
        if self.dt == "f32":
            return "%" + nm
        t = self.tmp()
        self.lines.append("  %s = cast %%%s : f32%s" % (t, nm, self.shape(*dims)))
        return t

    def op(self, text, typ=None):
        t = self.tmp()
        self.lines.append("  %s = %s%s" % (t, text, " : " + typ if typ else ""))
        return t

    def out(self, v, dims):
        if self.dt != "f32":
            v = self.op("cast %s" % v, "%s%s" % (self.dt, self.shape(*dims)))
        self.outs.append(v)

    def text(self):
        return "fusion @%s {\n%s\n  output %s\n}\n" % (self.name, "\n".join(self.lines), ", ".join(self.outs))


def x_input(f, example):
    return f.input("X", (f.m, f.n), example)


def bcast_row(f, v):
    return f.op("broadcast %s {is_broadcast_dim=[false, true]}" % v, "f32[%s, 1]" % f.m)


def bcast_col(f, v):
    return f.op("broadcast %s {is_broadcast_dim=[true, false]}" % v, "f32[1, %s]" % f.n)


def softmax_parts(f, x):
    mx = f.op("max %s {axes=[1]}" % x, "f32[%s]" % f.m)
    d = f.op("sub %s, %s" % (x, bcast_row(f, mx)))
    e = f.op("exp %s" % d)
    s = f.op("sum %s {axes=[1]}" % e, "f32[%s]" % f.m)
    return mx, d, e, s


def p_softmax(f, ex):
    _, _, e, s = softmax_parts(f, x_input(f, ex))
    f.out(f.op("div %s, %s" % (e, bcast_row(f, s))), (f.m, f.n))


def p_softmax_masked(f, ex):
    # where(x > 1, -inf, x): some rows of 1 or 3 are all -inf (NaN on both sides)
    x = x_input(f, ex)
    big = f.op("gt %s, 1.0" % x)
    _, _, e, s = softmax_parts(f, f.op("where %s, -inf, %s" % (big, x)))
    f.out(f.op("div %s, %s" % (e, bcast_row(f, s))), (f.m, f.n))


def p_log_softmax(f, ex):
    _, d, _, s = softmax_parts(f, x_input(f, ex))
    f.out(f.op("sub %s, %s" % (d, bcast_row(f, f.op("log %s" % s)))), (f.m, f.n))


def p_logsumexp(f, ex):
    mx, _, _, s = softmax_parts(f, x_input(f, ex))
    f.out(f.op("add %s, %s" % (f.op("log %s" % s), mx)), (f.m,))


def layernorm_of(f, h, w, b):
    v, mean = f.tmp(), f.tmp()
    f.lines.append("  %s, %s = var_mean %s {axes=[1], correction=0}" % (v, mean, h))
    r = f.op("rsqrt %s" % f.op("add %s, 1e-05" % v))
    y = f.op("mul %s, %s" % (f.op("sub %s, %s" % (h, bcast_row(f, mean))), bcast_row(f, r)))
    y = f.op("add %s, %s" % (f.op("mul %s, %s" % (y, bcast_col(f, w))), bcast_col(f, b)))
    return y, mean, r


def p_layernorm(f, ex):
    x = x_input(f, ex)
    wex = "[%d]" % f.ex_n if ex else None
    w = f.input("W", (f.n,), wex)
    b = f.input("B", (f.n,), wex)
    y, mean, r = layernorm_of(f, x, w, b)
    f.out(y, (f.m, f.n))
    f.outs += [mean, r]  # the statistics stay f32, as nvFuser's layer norm returns them


def p_layernorm_sum(f, ex):
    # sum-based, no weight: mean = sum / n, var = sum((x - mean)^2) / n
    x = x_input(f, ex)
    mean = f.op("div %s, %s" % (f.op("sum %s {axes=[1], keepdim=true}" % x, "f32[%s, 1]" % f.m), float(f.ex_n)))
    d = f.op("sub %s, %s" % (x, mean))
    var = f.op("div %s, %s" % (f.op("sum %s {axes=[1], keepdim=true}" % f.op("mul %s, %s" % (d, d)), "f32[%s, 1]" % f.m),
                               float(f.ex_n)))
    f.out(f.op("mul %s, %s" % (d, f.op("rsqrt %s" % f.op("add %s, 1e-05" % var)))), (f.m, f.n))


def p_rmsnorm(f, ex):
    x = x_input(f, ex)
    w = f.input("W", (f.n,), "[%d]" % f.ex_n if ex else None)
    ms = f.op("div %s, %s" % (f.op("sum %s {axes=[1]}" % f.op("mul %s, %s" % (x, x)), "f32[%s]" % f.m), float(f.ex_n)))
    r = f.op("rsqrt %s" % f.op("add %s, 1e-06" % ms))
    f.out(f.op("mul %s, %s" % (f.op("mul %s, %s" % (x, bcast_row(f, r))), bcast_col(f, w))), (f.m, f.n))


def p_residual_layernorm(f, ex):
    # h = x + residual is an output too (the next block's residual)
    x = x_input(f, ex)
    res = f.input("R", (f.m, f.n), ex)
    wex = "[%d]" % f.ex_n if ex else None
    w = f.input("W", (f.n,), wex)
    b = f.input("B", (f.n,), wex)
    h = f.op("add %s, %s" % (x, res))
    f.out(h, (f.m, f.n))
    y, _, _ = layernorm_of(f, h, w, b)
    f.out(y, (f.m, f.n))


def p_softmax_bwd(f, ex):
    # dx = y * (dy - sum(dy * y))
    dy = f.input("DY", (f.m, f.n), ex)
    y = f.input("Y", (f.m, f.n), ex)
    s = f.op("sum %s {axes=[1], keepdim=true}" % f.op("mul %s, %s" % (dy, y)), "f32[%s, 1]" % f.m)
    f.out(f.op("mul %s, %s" % (y, f.op("sub %s, %s" % (dy, s)))), (f.m, f.n))


def row_stat(f, nm):
    # a per-row statistic saved by the forward pass (f32, as nvFuser keeps it)
    f.seed += 1
    ex = ", example_shape=[%d]" % f.ex_m if f.sym else ""
    attrs = "" if f.unbound else " {example=randn%s, seed=%d}" % (ex, f.seed)
    f.lines.append("  %%%s = input f32[%s]%s" % (nm, f.m, attrs))
    return bcast_row(f, "%" + nm)


def p_rmsnorm_bwd(f, ex):
    # dx = r * g - x * r^3 * sum(g * x) / n, g = dy * w, r = rstd
    dy = f.input("DY", (f.m, f.n), ex)
    x = f.input("X", (f.m, f.n), ex)
    w = f.input("W", (f.n,), "[%d]" % f.ex_n if ex else None)
    r = row_stat(f, "RSTD")
    g = f.op("mul %s, %s" % (dy, bcast_col(f, w)))
    s = f.op("sum %s {axes=[1], keepdim=true}" % f.op("mul %s, %s" % (g, x)), "f32[%s, 1]" % f.m)
    r3 = f.op("mul %s, %s" % (f.op("mul %s, %s" % (r, r)), r))
    c = f.op("div %s, %s" % (f.op("mul %s, %s" % (s, r3)), float(f.ex_n)))
    f.out(f.op("sub %s, %s" % (f.op("mul %s, %s" % (g, r)), f.op("mul %s, %s" % (x, c)))), (f.m, f.n))


def p_layernorm_bwd(f, ex):
    # dx = r * (g - mean(g) - xh * mean(g * xh)), xh = (x - mean) * r, g = dy * w:
    # two independent reductions, one pass
    dy = f.input("DY", (f.m, f.n), ex)
    x = f.input("X", (f.m, f.n), ex)
    w = f.input("W", (f.n,), "[%d]" % f.ex_n if ex else None)
    mean = row_stat(f, "MEAN")
    r = row_stat(f, "RSTD")
    g = f.op("mul %s, %s" % (dy, bcast_col(f, w)))
    xh = f.op("mul %s, %s" % (f.op("sub %s, %s" % (x, mean)), r))
    s1 = f.op("sum %s {axes=[1], keepdim=true}" % g, "f32[%s, 1]" % f.m)
    s2 = f.op("sum %s {axes=[1], keepdim=true}" % f.op("mul %s, %s" % (g, xh)), "f32[%s, 1]" % f.m)
    m1 = f.op("div %s, %s" % (s1, float(f.ex_n)))
    m2 = f.op("div %s, %s" % (s2, float(f.ex_n)))
    t = f.op("sub %s, %s" % (f.op("sub %s, %s" % (g, m1)), f.op("mul %s, %s" % (xh, m2))))
    f.out(f.op("mul %s, %s" % (t, r)), (f.m, f.n))


PATTERNS = [("softmax", p_softmax), ("softmax_masked", p_softmax_masked), ("log_softmax", p_log_softmax),
            ("logsumexp", p_logsumexp), ("layernorm", p_layernorm), ("layernorm_sum", p_layernorm_sum),
            ("rmsnorm", p_rmsnorm), ("residual_layernorm", p_residual_layernorm), ("softmax_bwd", p_softmax_bwd),
            ("rmsnorm_bwd", p_rmsnorm_bwd), ("layernorm_bwd", p_layernorm_bwd)]


def make(pname, fn, dt, m, n, seed, sym=False):
    name = "%s_%s_%s" % (pname, dt, "sym" if sym else "%dx%d" % (m, n))
    f = Fusion(name, dt, "M" if sym else m, "N" if sym else n, seed)
    f.ex_n, f.ex_m, f.sym = n, m, sym
    fn(f, "[%d, %d]" % (m, n) if sym else None)
    return f.text()


def write_sizes(out, fname, header, sizes, rows, seed):
    """Every pattern and dtype at each row length of `sizes` (rows(n) rows) into one file; returns the next seed."""
    body = []
    for pname, fn in PATTERNS:
        for dt in DTYPES:
            for n in sizes:
                body.append(make(pname, fn, dt, rows(n), n, seed))
                seed += 10
    with open(os.path.join(out, fname), "w") as fh:
        fh.write(header)
        fh.write("".join(body))
    return seed


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    head = "// Generated by test/gpu/gen_persistent.py: do not edit; rerun it.\n"
    seed = 1200
    for pname, fn in PATTERNS:
        body = []
        for dt in DTYPES:
            for n in SMALL:
                body.append(make(pname, fn, dt, rows_for(n), n, seed))
                seed += 10
            body.append(make(pname, fn, dt, 7, 4099, seed, sym=True))
            seed += 10
        with open(os.path.join(out, "persistent_%s.fir" % pname), "w") as fh:
            fh.write(head + "// %s rows of 1 to 4099 elements and symbolic, f32, bf16 and f16.\n" % pname)
            fh.write("".join(body))
    seed = write_sizes(out, "persistent_large.fir", head + "// GPU-only row lengths (too slow for the kernel-IR "
                       "interpreter): 32768 and 1048576.\n", LARGE, rows_for, seed)
    seed = write_sizes(out, "persistent_smem.fir", head + "// Rows of 65536 and 40961: the shared-memory tier "
                       "(persist=smem) where a block's shared memory\n// holds them (bf16 and f16 at 65536, every dtype "
                       "at 40961), reread where not (f32 at 65536).\n", SMEM, lambda n: 2, seed)
    body = []
    for pname, fn in PATTERNS:
        f = Fusion("%s_long_sym" % pname, "bf16", 2, "N", seed)
        f.ex_n, f.ex_m, f.sym = 1048576, 2, False
        f.unbound = True
        fn(f, None)
        body.append(f.text())
        seed += 10
    with open(os.path.join(out, "persistent_symbolic_long.fir"), "w") as fh:
        fh.write(head + "// Rows whose length only the run knows (unbound N, 1048576 on the GPU): persist=reread.\n")
        fh.write("// gpu-tests: --random --default-extent=1048576\n")
        fh.write("".join(body))
    write_sizes(out, "persistent_widths.fir", head + "// Rows of 1216, 1280, 1536, 1600, 3072, 4544, 5120 and 12288 elements (not a power "
                "of two): split over\n// the threads of a row, 5 or 3 rows (the row guard).\n", WIDTHS, rows_for,
                seed)


if __name__ == "__main__":
    main()
