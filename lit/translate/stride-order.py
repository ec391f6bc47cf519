# RUN: fuser-translate --from=nvfuser-py %s 2>%t.err | FileCheck %s
# RUN: FileCheck %s --check-prefix=WARN < %t.err
# fd.ops.stride_order keeps the values (a copy) but not yet the layout it
# asks for, and says so.

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.stride_order(T0, stride_order=[0, 1])
    fd.add_output(T1)
# CHECK: %T1 = set %T0 : f32[i0, i1]
# WARN: stride-order.py:[[@LINE-3]]:10: warning: 'fd.ops.stride_order' is read as a copy: the output layout it asks for is not kept
