# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py %s | fuser-translate --to=nvfuser-py | FileCheck %s --check-prefix=PY
# fd.ops.matmul and fd.ops.linear (bias optional, by position or keyword).

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, 4096], contiguity=[True, True, True], dtype=DataType.BFloat16)
    T1 = fd.define_tensor(shape=[11008, 4096], contiguity=[True, True], dtype=DataType.BFloat16)
    T2 = fd.define_tensor(shape=[11008], contiguity=[True], dtype=DataType.BFloat16)
    T3 = fd.ops.linear(T0, T1)
    T4 = fd.ops.linear(T0, T1, T2)
    T5 = fd.ops.linear(T0, T1, bias=None)
    T6 = fd.ops.linear(input=T0, weight=T1, bias=T2)
    T7 = fd.define_tensor(shape=[-1, 4096, -1], contiguity=[True, True, True], dtype=DataType.BFloat16)
    T8 = fd.ops.matmul(T0, T7)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T8)
# CHECK: %T3 = linear %T0, %T1 : bf16[i0, i1, 11008]
# CHECK: %T4 = linear %T0, %T1, %T2 : bf16[i0, i1, 11008]
# CHECK: %T5 = linear %T0, %T1 : bf16[i0, i1, 11008]
# CHECK: %T6 = linear %T0, %T1, %T2 : bf16[i0, i1, 11008]
# CHECK: %T7 = input bf16[i0, 4096, i2]
# CHECK: %T8 = matmul %T0, %T7 : bf16[i0, i1, i2]
# PY: fd.ops.linear(T0, T1)
# PY: fd.ops.linear(T0, T1, T2)
# PY: fd.ops.matmul(T0, T7)
