# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# Script constants fold with Python's rules when int, float and bool mix
# (a float operand reads as a float, never through the bool member).
# CHECK: %T1 = mul %T0, 1.1 : f32[i0]
# CHECK: %T2 = mul %T1, 1.4 : f32[i0]
# CHECK: %T3 = mul %T2, 1.3 : f32[i0]
# CHECK: %T4 = mul %T3, 2 : f32[i0]
# CHECK: %T5 = mul %T4, -0.25 : f32[i0]
def f(fd):
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    a = 0.1 + 1
    b = 2 * 0.7
    c = True + 0.3
    d = 3 // 2 + True
    e = -1 / 4
    T1 = fd.ops.mul(T0, a)
    T2 = fd.ops.mul(T1, b)
    T3 = fd.ops.mul(T2, c)
    T4 = fd.ops.mul(T3, d)
    T5 = fd.ops.mul(T4, e)
    fd.add_output(T5)
