# RUN: fuser-translate --from=nvfuser-py %s -o %t.fir
# RUN: FileCheck %s < %t.fir
# RUN: fuser-translate --to=nvfuser-py %t.fir | FileCheck %s --check-prefix=PY
# RUN: fuser-run %t.fir --device=kir --check | FileCheck %s --check-prefix=KIR
# With a stride_order, nvFuser reads `contiguity` in allocation order
# (outermost first: entry k is the dim whose stride order is rank - 1 - k),
# as its computeTensorDescriptor writes it; the IR keeps it per logical
# dim.  sizes [2, 1, 3, 1, 4] with strides [24, 4, 8, 4, 2]: stride order
# [4, 2, 3, 1, 0], contiguity [True, True, None, None, False].
import torch
from nvfuser import FusionDefinition, DataType

def alloc_order(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 1, 3, 1, 4], contiguity=[True, True, None, None, False], dtype=DataType.Float, is_cpu=False, stride_order=[4, 2, 3, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, False, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0, 2])
    T2 = fd.ops.mul(T0, 2.0)
    T3 = fd.ops.neg(T1)
    fd.add_output(T2)
    fd.add_output(T3)

inputs = [
    torch.randn(48, device="cuda").as_strided((2, 1, 3, 1, 4), (24, 4, 8, 4, 2)),
    torch.randn(120, device="cuda").as_strided((4, 5, 3), (10, 1, 40)),
]
# CHECK: %T0 = input f32[2, 1, 3, 1, 4] {stride_order=[4, 2, 3, 1, 0], contiguity=[true, none, true, none, false]
# allocation order [dim 2, dim 0, dim 1]: dim 0 is the one not contiguous
# CHECK: %T1 = input f32[i0, i1, i2] {stride_order=[1, 0, 2], contiguity=[false, true, true]
# PY: T0 = fd.define_tensor(shape=[2, 1, 3, 1, 4], contiguity=[True, True, None, None, False], dtype=DataType.Float, is_cpu=False, stride_order=[4, 2, 3, 1, 0])
# PY: T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, False, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0, 2])
# KIR: check %T2: PASS f32[2, 1, 3, 1, 4]
# KIR: check %T3: PASS f32[4, 5, 3]
