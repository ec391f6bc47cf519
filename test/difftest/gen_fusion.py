#!/usr/bin/env python3
"""fuser difftest: a generator of random valid fusions, written as .fir text.

    gen_fusion.py SEED [--count N] [-o FILE]

One seed gives one fusion (--count: N fusions, of seeds SEED.., in one file), the same on every machine (Python's `random`
with that seed, no other source of randomness).  The generator follows the
IR's typing rules (docs/ir.md, "Dtype rules" and "Ops"; lib/ir/infer.c and
lib/ir/promote.c) so every fusion it writes verifies: a verifier error is a
bug of the generator or of the verifier, and the driver reports it as such.

What a fusion may hold:
  - 1 to 3 tensor inputs (f64 f32 f16 bf16 i64 i32 bool), sometimes a scalar
    input; ranks 0 to 4; odd, prime, 1 and symbolic sizes (bound through
    example_shape); permuted (stride_order) and non-contiguous
    (contiguity + example_strides) layouts;
  - pointwise ops of every class of include/fuser/ops.def (unary, binary,
    ternary, cast) with tensor and literal operands;
  - broadcasts (broadcast_in_dim, broadcast + expand, implicit size-1 dims);
  - views: permute, reshape (split or merge of constant dims), squeeze;
  - reductions (sum prod max min var var_mean) over random axes, with
    keepdim, an explicit dtype and correction;
  - now and then resize ops (slice, pad, cat) and creation ops (full, iota);
  - 1 to 3 outputs.
Inputs hold small values (randn, rand, randint in [-8, 8)), so the int ops
that the interpreter refuses (division by zero) only take literal nonzero
divisors, and int pow only small literal exponents.
"""
import argparse
import random
import sys

FLOATS = ["f64", "f32", "f16", "bf16"]
INTS = ["i64", "i32"]
DTYPES = FLOATS + INTS + ["bool"]
SIZE = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "bool": 1}

# unary ops by what they take (FU_OF_FLOAT_RESULT ops turn int/bool into f32)
UNARY_FLOAT_RESULT = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                      "reciprocal", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin", "acos",
                      "atan", "erf", "erfc", "sigmoid", "silu"]
UNARY_SAME = ["abs", "neg", "relu", "floor", "ceil", "round", "trunc", "sign", "set"]
UNARY_BOOL_RESULT = ["logical_not", "isnan", "isinf", "isfinite"]
BINARY_ARITH = ["add", "sub", "mul", "maximum", "minimum"]
BINARY_DIVLIKE = ["div", "fmod", "remainder"]
BINARY_CMP = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"]
BINARY_BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]
CONST_EXTENTS = [1, 1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 63, 127]
SYMBOLS = ["N", "M", "K", "L"]
MAX_ELEMS = 1 << 14


def category(dt):
    return 2 if dt in FLOATS else 1 if dt in INTS else 0


def promote(a, b):
    """fu_dtype_promote: the higher category wins, then the wider; f16 with bf16 is f32."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if {a, b} == {"f16", "bf16"}:
        return "f32"
    return a if SIZE[a] >= SIZE[b] else b


def common(operands):
    """fu_dtype_common: tensors promote among themselves, scalars (a float
    scalar counting as f32) may only raise the category."""
    tensors = scalars = plain = None
    for v in operands:
        plain = promote(plain, v.dtype)
        if v.shape is not None:
            tensors = promote(tensors, v.dtype)
        else:
            scalars = promote(scalars, "f32" if v.dtype in FLOATS else v.dtype)
    if tensors is None:
        return plain
    if scalars is None:
        return tensors
    if category(scalars) > category(tensors):
        return promote(tensors, scalars)
    return tensors


class Val:
    """A value: its text (a %name or a literal), dtype and shape (None: scalar)."""

    def __init__(self, text, dtype, shape):
        self.text, self.dtype, self.shape = text, dtype, shape


def type_str(dtype, shape):
    if shape is None:
        return dtype
    return "%s[%s]" % (dtype, ", ".join(str(e) for e in shape))


def fmt_float(x):
    s = repr(float(x))
    return s if ("." in s or "e" in s or s in ("inf", "-inf", "nan")) else s + ".0"


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.seed = seed
        self.lines = []
        self.vals = []      # tensor values defined so far
        self.inputs = []
        self.n = 0
        self.sizes = {}     # symbol -> concrete size
        self.resize = False

    # ---- helpers ----------------------------------------------------------

    def name(self):
        self.n += 1
        return "%%T%d" % self.n

    def emit(self, text, dtype, shape, keep=True):
        v = Val(self.name(), dtype, shape)
        self.lines.append("  %s = %s : %s" % (v.text, text, type_str(dtype, shape)))
        if keep:
            self.vals.append(v)
        return v

    def conc(self, e):
        return self.sizes[e] if isinstance(e, str) else e

    def elems(self, shape):
        p = 1
        for e in shape:
            p *= self.conc(e)
        return p

    def pick_shape(self):
        r = self.r
        rank = r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        while True:
            shape = []
            for _ in range(rank):
                if r.random() < 0.25:
                    s = r.choice(SYMBOLS)
                    if s not in self.sizes:
                        self.sizes[s] = r.choice([1, 3, 5, 7, 16, 33, 129])
                    shape.append(s)
                else:
                    shape.append(r.choice(CONST_EXTENTS))
            if self.elems(shape) <= MAX_ELEMS:
                return shape

    def literal(self, dtype, nonzero=False, small=False):
        """A literal operand of dtype's category (a bare or a typed one)."""
        r = self.r
        if dtype in FLOATS:
            x = r.choice([0.5, -1.5, 2.0, 0.25, 3.0, -0.75, 1e-3, 10.0]) if not small else r.choice([0.5, 2.0, -1.0])
            text = fmt_float(x) if r.random() < 0.7 else "%s(%s)" % (dtype, fmt_float(x))
            return Val(text, "f64" if "(" not in text else dtype, None)
        if dtype in INTS:
            choices = [1, 2, 3, -3, 7] if nonzero else [0, 1, 2, -3, 5]
            if small:
                choices = [0, 1, 2, 3]
            x = r.choice(choices)
            text = str(x) if r.random() < 0.7 else "%s(%d)" % (dtype, x)
            return Val(text, "i64" if "(" not in text else dtype, None)
        return Val(r.choice(["true", "false"]), "bool", None)

    def pick(self, pred=lambda v: True):
        c = [v for v in self.vals if pred(v)]
        return self.r.choice(c) if c else None

    def partner(self, a, pred=lambda v: True):
        """A tensor value whose shape broadcasts with a's (same extents, or 1s), or None."""
        def ok(v):
            if v.shape is None or len(v.shape) != len(a.shape):
                return False
            return all(x == y or x == 1 or y == 1 for x, y in zip(v.shape, a.shape)) and pred(v)
        return self.pick(ok)

    @staticmethod
    def bshape(a, b):
        if b.shape is None:
            return a.shape
        return [y if x == 1 else x for x, y in zip(a.shape, b.shape)]

    # ---- inputs -----------------------------------------------------------

    def add_input(self, shape=None, dtype=None):
        r = self.r
        dtype = dtype or r.choice(["f32", "f32", "f32", "f64", "f16", "bf16", "i32", "i64", "bool"])
        shape = self.pick_shape() if shape is None else shape
        v = Val(self.name(), dtype, shape)
        attrs = []
        rank = len(shape)
        if rank >= 2 and r.random() < 0.2:
            order = list(range(rank))
            r.shuffle(order)
            attrs.append("stride_order=[%s]" % ", ".join(map(str, order)))
        elif rank >= 1 and r.random() < 0.15:
            # every other element of the outermost dim's rows: a run-time stride
            inner = 1
            strides = []
            for e in reversed(shape):
                strides.append(inner)
                inner *= self.conc(e)
            strides.reverse()
            strides[0] = strides[0] * 2 + 1 if rank > 1 else 3
            attrs.append("contiguity=[%s]" % ", ".join(["false"] + ["true"] * (rank - 1)))
            attrs.append("example_strides=[%s]" % ", ".join(map(str, strides)))
        if dtype in FLOATS:
            attrs.append("example=%s" % r.choice(["randn", "randn", "rand"]))
        elif dtype in INTS:
            attrs.append("example=randint, low=-8, high=8")
        else:
            attrs.append("example=randint, low=0, high=2")
        attrs.append("seed=%d" % r.randrange(1000))
        if any(isinstance(e, str) for e in shape):
            attrs.append("example_shape=[%s]" % ", ".join(str(self.conc(e)) for e in shape))
        self.lines.append("  %s = input %s {%s}" % (v.text, type_str(dtype, shape), ", ".join(attrs)))
        self.vals.append(v)
        self.inputs.append(v)
        return v

    def add_scalar_input(self):
        r = self.r
        dtype = r.choice(["f32", "f64", "i64", "i32", "bool"])
        v = Val(self.name(), dtype, None)
        ex = {"bool": r.choice(["true", "false"])}.get(dtype)
        if ex is None:
            ex = fmt_float(r.choice([0.5, -2.0, 3.25])) if dtype in FLOATS else str(r.choice([-2, 3, 5]))
        self.lines.append("  %s = input %s {example=%s}" % (v.text, dtype, ex))
        self.inputs.append(v)
        return v

    # ---- ops --------------------------------------------------------------

    def op_unary(self):
        r = self.r
        a = self.pick()
        if a.dtype == "bool":
            opname = r.choice(UNARY_FLOAT_RESULT[:6] + UNARY_BOOL_RESULT + ["bitwise_not", "set"])
        elif a.dtype in INTS:
            opname = r.choice(UNARY_FLOAT_RESULT + UNARY_SAME + UNARY_BOOL_RESULT + ["bitwise_not"])
        else:
            opname = r.choice(UNARY_FLOAT_RESULT * 2 + UNARY_SAME + UNARY_BOOL_RESULT)
        if opname in UNARY_BOOL_RESULT:
            dt = "bool"
        elif opname in UNARY_FLOAT_RESULT:
            dt = a.dtype if a.dtype in FLOATS else "f32"
        else:
            dt = a.dtype
        return self.emit("%s %s" % (opname, a.text), dt, a.shape)

    def op_binary(self):
        r = self.r
        a = self.pick()
        kind = r.choice(["arith"] * 4 + ["div", "cmp", "cmp", "bitwise", "pow", "atan2"])
        b = None
        if kind == "bitwise":
            if a.dtype in FLOATS:
                a = self.pick(lambda v: v.dtype not in FLOATS)
                if a is None:
                    return None
            b = self.partner(a, lambda v: v.dtype not in FLOATS) if r.random() < 0.7 else None
            b = b or self.literal(a.dtype if a.dtype != "bool" else "bool")
            opname = r.choice(BINARY_BITWISE)
        elif kind == "div":
            opname = r.choice(BINARY_DIVLIKE)
            if a.dtype in FLOATS:
                b = self.partner(a, lambda v: v.dtype in FLOATS) or self.literal(a.dtype)
            else:
                b = self.literal("i64", nonzero=True)
        elif kind == "pow":
            opname = "pow"
            if a.dtype in FLOATS:
                b = self.partner(a, lambda v: v.dtype in FLOATS) if r.random() < 0.5 else None
                b = b or self.literal(a.dtype, small=True)
            else:
                b = self.literal("i64", small=True)
        elif kind == "atan2":
            opname = "atan2"
            b = self.partner(a) or self.literal("f32")
        else:
            opname = r.choice(BINARY_ARITH if kind == "arith" else BINARY_CMP)
            b = self.partner(a) if r.random() < 0.7 else None
            b = b or self.literal(a.dtype)
        if r.random() < 0.5 and b.shape is not None:
            a, b = b, a
        ops = [a, b]
        dt = common(ops)
        if opname in BINARY_CMP:
            dt = "bool"
        elif opname == "atan2" and dt not in FLOATS:
            dt = "f32"
        if opname in ("sub", "neg") and dt == "bool":
            opname = "add"
        shape = self.bshape(a, b) if a.shape is not None else b.shape
        return self.emit("%s %s, %s" % (opname, a.text, b.text), dt, shape)

    def op_ternary(self):
        r = self.r
        kind = r.choice(["where", "where", "clamp", "lerp"])
        if kind == "where":
            c = self.pick(lambda v: v.dtype == "bool" and v.shape is not None)
            if c is None:
                x = self.pick()
                c = self.emit("gt %s, %s" % (x.text, self.literal(x.dtype).text), "bool", x.shape)
            a = self.partner(c) or self.literal(r.choice(["f32", "i64"]))
            shape = c.shape if a.shape is None else self.bshape(c, a)
            b = self.partner(Val("", "", shape), lambda v: category(v.dtype) == category(a.dtype)) \
                if r.random() < 0.6 else None
            b = b or self.literal(a.dtype)
            dt = common([a, b])
            if b.shape is not None:
                shape = self.bshape(Val("", "", shape), b)
            return self.emit("where %s, %s, %s" % (c.text, a.text, b.text), dt, shape)
        if kind == "clamp":
            x = self.pick(lambda v: v.dtype != "bool")
            if x is None:
                return None
            if x.dtype in FLOATS:
                lo, hi = r.choice([(-0.5, 0.5), (0.0, 1.0), (-2.0, 0.25)])
                lo, hi = fmt_float(lo), fmt_float(hi)
            else:
                lo, hi = r.choice([(-3, 3), (0, 5), (-1, 0)])
            return self.emit("clamp %s, %s, %s" % (x.text, lo, hi), x.dtype, x.shape)
        a = self.pick(lambda v: v.dtype in FLOATS)
        if a is None:
            return None
        b = self.partner(a, lambda v: v.dtype in FLOATS) or self.literal(a.dtype)
        shape = self.bshape(a, b)
        w = self.partner(Val("", "", shape), lambda v: v.dtype in FLOATS) if r.random() < 0.3 else None
        w = w or Val(fmt_float(r.choice([0.25, 0.5, 0.9])), "f64", None)
        dt = common([a, b, w])
        shape = self.bshape(Val("", "", shape), w)
        return self.emit("lerp %s, %s, %s" % (a.text, b.text, w.text), dt, shape)

    def op_cast(self):
        a = self.pick()
        dt = self.r.choice([d for d in DTYPES if d != a.dtype])
        return self.emit("cast %s" % a.text, dt, a.shape)

    def op_reduce(self):
        r = self.r
        a = self.pick(lambda v: v.shape)
        if a is None:
            return None
        rank = len(a.shape)
        axes = sorted(r.sample(range(rank), r.randint(1, rank))) if r.random() < 0.95 else []
        keep = r.random() < 0.4
        shape = [1 if i in axes else e for i, e in enumerate(a.shape)] if keep else \
            [e for i, e in enumerate(a.shape) if i not in axes]
        if a.dtype in FLOATS and r.random() < 0.3:
            opname = r.choice(["var", "var_mean"])
            attrs = "axes=[%s], correction=%d, keepdim=%s" % (", ".join(map(str, axes)), r.choice([0, 1]),
                                                            "true" if keep else "false")
            if opname == "var_mean":
                v, m = self.name(), self.name()
                t = type_str(a.dtype, shape)
                self.lines.append("  %s, %s = var_mean %s {%s} : %s, %s" % (v, m, a.text, attrs, t, t))
                self.vals += [Val(v, a.dtype, shape), Val(m, a.dtype, shape)]
                return self.vals[-1]
            return self.emit("var %s {%s}" % (a.text, attrs), a.dtype, shape)
        opname = r.choice(["sum", "sum", "max", "min", "prod"])
        if opname == "prod" and self.elems(a.shape) > 64:
            opname = "sum"
        dt = a.dtype
        extra = ""
        if opname in ("sum", "prod") and dt not in FLOATS:
            dt = "i64"
        if r.random() < 0.15:
            dt = r.choice(["f32", "f64"] if a.dtype in FLOATS else ["i64", "f32"])
            extra = ", dtype=%s" % dt
        attrs = "axes=[%s]%s" % (", ".join(map(str, axes)), extra)
        if keep:
            attrs += ", keepdim=true"
        return self.emit("%s %s {%s}" % (opname, a.text, attrs), dt, shape)

    def op_broadcast(self):
        """broadcast_in_dim a lower-rank value into a higher-rank one's shape,
        or broadcast + expand a new size-1 dim."""
        r = self.r
        a = self.pick()
        full = self.pick(lambda v: v.shape is not None and a.shape is not None and len(v.shape) > len(a.shape))
        if a.shape is not None and full is not None:
            # choose result dims for a's dims: same extents in order
            dims, j = [], 0
            for i, e in enumerate(full.shape):
                if j < len(a.shape) and (a.shape[j] == e or a.shape[j] == 1):
                    dims.append(i)
                    j += 1
            if j == len(a.shape):
                shape = [e for e in full.shape]
                for d, e in zip(dims, a.shape):
                    if e == 1:
                        shape[d] = 1 if r.random() < 0.3 else shape[d]
                return self.emit("broadcast_in_dim %s {broadcast_dims=[%s]}" % (a.text, ", ".join(map(str, dims))),
                                 a.dtype, shape)
        if a.shape is None or len(a.shape) >= 4:
            return None
        pos = r.randint(0, len(a.shape))
        flags = ["false"] * len(a.shape)
        flags.insert(pos, "true")
        shape = list(a.shape)
        shape.insert(pos, 1)
        b = self.emit("broadcast %s {is_broadcast_dim=[%s]}" % (a.text, ", ".join(flags)), a.dtype, shape)
        if r.random() < 0.6:
            shape = list(shape)
            bound = sorted({e for v in self.inputs if v.shape for e in v.shape if isinstance(e, str)})
            shape[pos] = r.choice([3, 5, 8]) if r.random() < 0.7 or not bound else r.choice(bound)
            if self.elems(shape) <= MAX_ELEMS:
                return self.emit("expand %s" % b.text, a.dtype, shape)
        return b

    def op_view(self):
        r = self.r
        a = self.pick(lambda v: v.shape)
        if a is None:
            return None
        rank = len(a.shape)
        kind = r.choice(["permute", "reshape", "reshape", "squeeze"])
        if kind == "squeeze":
            ones = [i for i, e in enumerate(a.shape) if e == 1]
            if not ones:
                kind = "permute"
            else:
                dims = sorted(r.sample(ones, r.randint(1, len(ones))))
                shape = [e for i, e in enumerate(a.shape) if i not in dims]
                return self.emit("squeeze %s {dims=[%s]}" % (a.text, ", ".join(map(str, dims))), a.dtype, shape)
        if kind == "reshape":
            shape = list(a.shape)
            merge = [i for i in range(rank - 1) if isinstance(shape[i], int) and isinstance(shape[i + 1], int)]
            split = [i for i in range(rank) if isinstance(shape[i], int) and
                     any(shape[i] % f == 0 and f != shape[i] for f in (2, 3, 4))]
            if merge and (r.random() < 0.5 or not split) and rank > 1:
                i = r.choice(merge)
                shape[i:i + 2] = [shape[i] * shape[i + 1]]
            elif split and rank < 4:
                i = r.choice(split)
                f = r.choice([f for f in (2, 3, 4) if shape[i] % f == 0 and f != shape[i]])
                shape[i:i + 1] = [shape[i] // f, f]
            else:
                kind = "permute"
            if kind == "reshape":
                return self.emit("reshape %s" % a.text, a.dtype, shape)
        if rank < 2:
            return None
        dims = list(range(rank))
        while dims == sorted(dims):
            r.shuffle(dims)
        shape = [a.shape[d] for d in dims]
        return self.emit("permute %s {dims=[%s]}" % (a.text, ", ".join(map(str, dims))), a.dtype, shape)

    def op_resize(self):
        r = self.r
        a = self.pick(lambda v: v.shape and any(isinstance(e, int) and e > 1 for e in v.shape))
        if a is None:
            return None
        d = r.choice([i for i, e in enumerate(a.shape) if isinstance(e, int) and e > 1])
        kind = r.choice(["slice", "pad", "cat"])
        self.resize = True
        if kind == "slice":
            e = a.shape[d]
            start = r.randrange(e)
            end = r.randint(start + 1, e)
            step = r.choice([1, 1, 2])
            starts = [0] * len(a.shape)
            ends = [self.conc(x) if isinstance(x, str) else x for x in a.shape]
            if any(isinstance(x, str) for x in a.shape):
                return None
            steps = [1] * len(a.shape)
            starts[d], ends[d], steps[d] = start, end, step
            shape = list(a.shape)
            shape[d] = (end - start + step - 1) // step
            return self.emit("slice %s {starts=[%s], ends=[%s], steps=[%s]}" % (
                a.text, ", ".join(map(str, starts)), ", ".join(map(str, ends)), ", ".join(map(str, steps))),
                a.dtype, shape)
        if kind == "pad":
            inner = len(a.shape) - 1 - d
            lo, hi = r.choice([(1, 2), (0, 3), (2, 0), (-1, 1)])
            widths = [0, 0] * inner + [lo, hi]
            shape = list(a.shape)
            shape[d] = shape[d] + lo + hi
            return self.emit("pad %s, %s {widths=[%s]}" % (a.text, self.literal(a.dtype).text,
                                                            ", ".join(map(str, widths))), a.dtype, shape)
        b = self.pick(lambda v: v.shape is not None and len(v.shape) == len(a.shape) and v.dtype == a.dtype and
                      all(x == y for i, (x, y) in enumerate(zip(v.shape, a.shape)) if i != d) and
                      isinstance(v.shape[d], int))
        if b is None:
            return None
        shape = list(a.shape)
        shape[d] = a.shape[d] + b.shape[d]
        return self.emit("cat %s, %s {dim=%d}" % (a.text, b.text, d), a.dtype, shape)

    def op_create(self):
        r = self.r
        a = self.pick(lambda v: v.shape is not None)
        if a is None:
            return None
        if r.random() < 0.5 or len(a.shape) != 1:
            dt = r.choice(["f32", "i64", "bool", "f16"])
            fill = self.literal(dt).text if dt != "bool" else "true"
            if dt in FLOATS and "(" not in fill:
                fill = "%s(%s)" % (dt, fill)
            elif dt in INTS and "(" not in fill:
                fill = "i64(%s)" % fill
            f = self.emit("full %s" % fill, dt, a.shape)
        else:
            f = self.emit("iota %d, %d" % (r.choice([0, -3, 5]), r.choice([1, 2, -1])), "i64", a.shape)
        return f

    # ---- the fusion -------------------------------------------------------

    def build(self):
        r = self.r
        shape = self.pick_shape()
        n_in = r.randint(1, 3)
        self.add_input(shape)
        for _ in range(n_in - 1):
            if r.random() < 0.6:
                self.add_input(list(shape))
            elif r.random() < 0.5 and shape:
                # a broadcastable operand: some dims 1
                self.add_input([1 if r.random() < 0.5 else e for e in shape])
            else:
                self.add_input()
        if r.random() < 0.15:
            s = self.add_scalar_input()
            t = self.pick(lambda v: v.shape is not None)
            ops = [t, s]
            self.emit("mul %s, %s" % (t.text, s.text), common(ops), t.shape)
        makers = [(self.op_unary, 6), (self.op_binary, 8), (self.op_ternary, 2), (self.op_cast, 2),
                  (self.op_reduce, 3), (self.op_broadcast, 2), (self.op_view, 2), (self.op_resize, 0.5),
                  (self.op_create, 0.5)]
        total = sum(w for _, w in makers)
        n_ops = r.randint(1, 12)
        done = 0
        while done < n_ops:
            x = r.random() * total
            for fn, w in makers:
                x -= w
                if x < 0:
                    break
            if fn() is not None:
                done += 1
        computed = [v for v in self.vals if v not in self.inputs]
        outs = [computed[-1]] if computed else [self.vals[-1]]
        for _ in range(r.randint(0, 2)):
            v = r.choice(self.vals)
            if v not in outs:
                outs.append(v)
        body = "\n".join(self.lines)
        return "// difftest seed %d\nfusion @difftest_%d {\n%s\n  output %s\n}\n" % (
            self.seed, self.seed, body, ", ".join(v.text for v in outs))


def generate(seed):
    """The .fir text of the fusion for seed, and whether it holds resize ops."""
    g = Gen(seed)
    text = g.build()
    return text, g.resize


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("--count", type=int, default=1, help="write the fusions of seeds SEED..SEED+COUNT-1 into one file")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    text = "".join(generate(s)[0] for s in range(a.seed, a.seed + a.count))
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
