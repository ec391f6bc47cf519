# RUN: fuser-translate --from=nvfuser-py --split-input-file %s | FileCheck %s
# RUN: not fuser-translate --from=nvfuser-py --split-input-file %s.errors 2>&1 | FileCheck %s.errors
# RUN: fuser-translate --from=nvfuser-py --function=methods %s -o %t.fir
# RUN: fuser-run --device=kir --check --random --default-extent=5 %t.fir | FileCheck %s --check-prefix=KIR
# KIR: check %T6: PASS f32[5, 5]
# KIR: check %T7: PASS i64[5, 5]
# Size and scalar expressions: T.size(d), fd.ops.size(T, dims=d), T.shape(), V[i],
# define_vector of sizes and constants, scalar arithmetic on sizes and on
# runtime scalars, and shapes made of them in reshape, broadcast_in_dim,
# expand, full, iota, slice and pad.  Symbolic sizes stay symbols.

# CHECK-LABEL: fusion @methods
# CHECK-NEXT: %T0 = input f32[i0, i1]
# CHECK-NEXT: %T1 = input f32[i0, 1]
# CHECK-NEXT: %T2 = expand %T1 : f32[i0, i1]
# CHECK-NEXT: %T3 = add %T0, %T2 : f32[i0, i1]
# CHECK-NEXT: %T4 = iota 0, 1 : i64[i1]
# CHECK-NEXT: %T5 = full 1.0 : f32[i0, i1]
# CHECK-NEXT: %T6 = add %T3, %T5 : f32[i0, i1]
# CHECK-NEXT: %T8 = full 2.0 : f32[i1]
# CHECK-NEXT: %T7 = broadcast_in_dim %T4 {broadcast_dims=[1]} : i64[i0, i1]
# CHECK-NEXT: output %T6, %T7, %T8
def methods(fd):
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
    s0 = T0.size(0)
    s1 = fd.ops.size(T0, dims=1)
    V = T0.shape()
    T2 = fd.ops.expand(T1, shape=V)
    T3 = fd.ops.add(T0, T2)
    n = fd.ops.mul(s0, 1)
    m = fd.ops.cast(s1, dtype=DataType.Int)
    T4 = fd.ops.iota(m, dtype=DataType.Int)
    T5 = fd.ops.full(shape=[n, s1 + 0], fill_value=1.0, dtype=DataType.Float)
    T6 = fd.ops.add(T3, T5)
    V2 = fd.define_vector([V[0], fd.ops.size(T0, 1)], dtype=DataType.Int)
    s2 = T0.shape()[-1]
    T8 = fd.ops.full(shape=[s2], fill_value=2.0, dtype=DataType.Float)
    T7 = fd.ops.broadcast_in_dim(T4, shape=V2, broadcast_dims=[1])
    fd.add_output(T6)
    fd.add_output(T7)
    fd.add_output(T8)

# -----
# Constant sizes fold: slice bounds, pad widths, reshape shapes and scalar
# operands made by arithmetic on them.
# CHECK-LABEL: fusion @folded
# CHECK-NEXT: %T0 = input f32[4, 6]
# CHECK-NEXT: %T1 = slice %T0 {starts=[0, 3], ends=[4, 6], steps=[1, 1]} : f32[4, 3]
# CHECK-NEXT: %T2 = pad %T1, 0.0 {widths=[1, 1, 0, 0]} : f32[4, 5]
# CHECK-NEXT: %T3 = reshape %T0 : f32[24]
# CHECK-NEXT: %T4 = mul %T3, f32(0.16666666666666666) : f32[24]
# CHECK-NEXT: %T5 = reshape %T0 : f32[2, 12]
# CHECK-NEXT: %T6 = sub %T5, -4 : f32[2, 12]
# CHECK-NEXT: output %T2, %T4, %T6
def folded(fd):
    T0 = fd.define_tensor(shape=[4, 6], contiguity=[True, True], dtype=DataType.Float)
    s0 = fd.ops.size(T0, dims=0)
    s1 = fd.ops.size(T0, dims=1)
    h = fd.ops.div(s1, 2)
    T1 = fd.ops.slice(T0, start_indices=[0, h], end_indices=[s0, s1], strides=[1, 1])
    p = fd.ops.sub(s0, 3)
    T2 = fd.ops.pad(T1, [p, p, 0, 0])
    n = fd.ops.mul(s0, s1)
    V = fd.define_vector([n], dtype=DataType.Int)
    T3 = fd.ops.reshape(T0, new_shape=V)
    c = fd.ops.cast(s1, dtype=DataType.Float)
    r = fd.ops.reciprocal(c)
    T4 = fd.ops.mul(T3, r)
    T5 = fd.ops.reshape(T0, new_shape=[s0 // 2, fd.ops.mul(s1, 2)])
    T6 = fd.ops.sub(T5, fd.ops.neg(s0))
    fd.add_output(T2)
    fd.add_output(T4)
    fd.add_output(T6)

# -----
# With an inputs list the sizes are the list's (a reshape to the product of
# two sizes of a -1 shape).
# CHECK-LABEL: fusion @from_inputs
# CHECK-NEXT: %T0 = input f32[8, 12]
# CHECK-NEXT: %T1 = reshape %T0 : f32[96]
def from_inputs(fd):
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    n = fd.ops.mul(T0.size(0), T0.size(1))
    T1 = fd.ops.reshape(T0, new_shape=[n])
    fd.add_output(T1)

inputs = [torch.randn(8, 12, device="cuda")]

# -----
# Arithmetic on runtime scalars is scalar ops.
# CHECK-LABEL: fusion @scalars
# CHECK-NEXT: %T0 = input f32[i0]
# CHECK-NEXT: %S0 = input f64
# CHECK-NEXT: %S1 = mul %S0, %S0 : f64
# CHECK-NEXT: %S2 = reciprocal %S1 : f64
# CHECK-NEXT: %S3 = neg %S2 : f64
# CHECK-NEXT: %S4 = div %S3, 2.0 : f64
# CHECK-NEXT: %S5 = cast %S4 : f32
# CHECK-NEXT: %T1 = mul %T0, %S5 : f32[i0]
def scalars(fd):
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    S0 = fd.define_scalar(None, dtype=DataType.Double)
    S1 = fd.ops.mul(S0, S0)
    S2 = fd.ops.reciprocal(S1)
    S3 = fd.ops.neg(S2)
    S4 = fd.ops.div(S3, 2.0)
    S5 = fd.ops.cast(S4, dtype=DataType.Float)
    T1 = fd.ops.mul(T0, S5)
    fd.add_output(T1)
