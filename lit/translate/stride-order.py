# RUN: fuser-translate --from=nvfuser-py %s 2>%t.err | FileCheck %s
# RUN: FileCheck %s --check-prefix=QUIET --allow-empty < %t.err
# RUN: fuser-translate --to=nvfuser-py %S/../run/stride-order.fir | FileCheck %s --check-prefix=EXPORT
# RUN: not fuser-translate --from=nvfuser-py %S/Inputs/stride-order-bad.py 2>&1 | FileCheck %s --check-prefix=BAD
# fd.ops.stride_order keeps the values and asks for the layout: the
# result is stored in that stride order (lit/run/stride-order.fir).

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.stride_order(T0, stride_order=[0, 1])
    fd.add_output(T1)
# CHECK: %T1 = stride_order %T0 {order=[0, 1]} : f32[i0, i1]
# QUIET-NOT: warning
# BAD: stride-order-bad.py:4:34: error: 'stride_order' of 'fd.ops.stride_order' must be a permutation of 0..1
# EXPORT: T2 = fd.ops.stride_order(T1, stride_order=[0, 1])
