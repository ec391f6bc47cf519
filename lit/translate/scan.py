# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py %s -o %t.fir
# RUN: fuser-translate --to=nvfuser-py %t.fir | FileCheck %s --check-prefix=EXPORT
# RUN: fuser-translate --to=nvfuser-py %t.fir -o %t.py
# RUN: fuser-translate --from=nvfuser-py %t.py -o %t2.fir
# RUN: diff %t.fir %t2.fir
# RUN: fuser-run --device=kir --check --random %t.fir | FileCheck %s --check-prefix=KIR
# RUN: not fuser-translate --from=nvfuser-py %s.errors 2>&1 | FileCheck %s.errors
# fd.ops.cumsum / cumprod / cummax / cummin(x, dim): the scan ops; a
# negative dim counts from the end; int and bool cumsum and cumprod give
# i64; the export writes them back.

# CHECK-LABEL: fusion @scans
# CHECK-NEXT: %T0 = input f32[i0, i1, i2]
# CHECK-NEXT: %T1 = input i32[i3, i4, i5]
# CHECK-NEXT: %T2 = cumsum %T0 {dim=2} : f32[i0, i1, i2]
# CHECK-NEXT: %T3 = cumprod %T1 {dim=0} : i64[i3, i4, i5]
# CHECK-NEXT: %T4 = cummax %T0 {dim=1} : f32[i0, i1, i2]
# CHECK-NEXT: %T5 = cummin %T1 {dim=1} : i32[i3, i4, i5]
# CHECK-NEXT: output %T2, %T3, %T4, %T5
# EXPORT: fd.ops.cumsum(T0, dim=2)
# EXPORT: fd.ops.cumprod(T1, dim=0)
# EXPORT: fd.ops.cummax(T0, dim=1)
# EXPORT: fd.ops.cummin(T1, dim=1)
# KIR: check %T2: PASS f32[4, 4, 4]
# KIR: check %T3: PASS i64[4, 4, 4]
# KIR: check %T4: PASS f32[4, 4, 4]
# KIR: check %T5: PASS i32[4, 4, 4]
def scans(fd):
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Int32)
    T2 = fd.ops.cumsum(T0, -1)
    T3 = fd.ops.cumprod(T1, dim=0)
    T4 = fd.ops.cummax(T0, 1)
    T5 = fd.ops.cummin(T1, dim=-2)
    fd.add_output(T2)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T5)
