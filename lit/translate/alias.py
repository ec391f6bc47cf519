# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py %s -o %t.fir
# RUN: fuser-translate --to=nvfuser-py %t.fir | FileCheck %s --check-prefix=PY
# RUN: fuser-translate --to=nvfuser-py %t.fir -o %t.py
# RUN: fuser-translate --from=nvfuser-py %t.py -o %t2.fir
# RUN: diff %t.fir %t2.fir
# RUN: fuser-run %t.fir --device=kir --check --print-values 2 | FileCheck %s --check-prefix=KIR
# fd.add_output(out, alias_input): the output is written into the input
# (`output %o {alias=%in}`, one output per line), as batch norm's running
# statistics are; the export writes the same call back; fuser-run shows
# the input updated.
import torch
from nvfuser import FusionDefinition, DataType

def running_stats(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3, T4 = fd.ops.var_mean(T0, dims=[0], correction=1, keepdim=False)
    S5 = fd.define_scalar(0.9, dtype=DataType.Double)
    S6 = fd.define_scalar(0.1, dtype=DataType.Double)
    T7 = fd.ops.mul(T1, S5)
    T8 = fd.ops.mul(T4, S6)
    T9 = fd.ops.add(T7, T8)
    T10 = fd.ops.mul(T2, S5)
    T11 = fd.ops.mul(T3, S6)
    T12 = fd.ops.add(T10, T11)
    fd.add_output(T4)
    fd.add_output(T3)
    fd.add_output(T9, T1)
    fd.add_output(T12, alias_input=T2)

inputs = [torch.randn(32, 8, device='cuda'), torch.zeros(8, device='cuda'), torch.ones(8, device='cuda')]

# CHECK-LABEL: fusion @running_stats {
# CHECK:         output %T4, %T3
# CHECK-NEXT:    output %T9 {alias=%T1}
# CHECK-NEXT:    output %T12 {alias=%T2}
# CHECK-NEXT:  }

# PY:      fd.add_output(T4)
# PY-NEXT: fd.add_output(T3)
# PY-NEXT: fd.add_output(T9, T1)
# PY-NEXT: fd.add_output(T12, T2)

# KIR: updated input %T1: f32[8] strides=[1]
# KIR-NEXT: values: [
# KIR: holds output %T9
# KIR: updated input %T2: f32[8] strides=[1]
# KIR: holds output %T12
# KIR: check %T9: PASS
# KIR: check %T12: PASS
