# RUN: fuser-translate --from=nvfuser-py --split-input-file %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py --function=welford_symbolic %s -o %t.s.fir
# RUN: fuser-run --device=kir --check --random --default-extent=7 %t.s.fir | FileCheck %s --check-prefix=SYM
# RUN: fuser-opt --pass=all %t.s.fir | FileCheck %s --check-prefix=SEG
# RUN: fuser-translate --from=nvfuser-py --function=welford_const %s -o %t.c.fir
# RUN: fuser-run --device=kir --check --print-values=all %t.c.fir | FileCheck %s --check-prefix=CONST
# fd.ops.welford(x, dims) = (avg, var_sum, n): var_mean with correction 0
# (one Welford reduction), var_sum = var * n, and n the count of reduced
# elements as i64 of the reduced shape: a constant where the reduced
# extents are, else a sum of ones.

# CHECK-LABEL: fusion @welford_symbolic
# CHECK-NEXT: %T0 = input f32[i0, i1, i2]
# CHECK-NEXT: %_T0, %avg = var_mean %T0 {axes=[0, 2], correction=0} : f32[i1], f32[i1]
# CHECK-NEXT: %_T1 = full 1 : i64[i0, i1, i2]
# CHECK-NEXT: %n = sum %_T1 {axes=[0, 2]} : i64[i1]
# CHECK-NEXT: %_T2 = cast %n : f32[i1]
# CHECK-NEXT: %var_sum = mul %_T0, %_T2 : f32[i1]
# CHECK-NEXT: output %avg, %var_sum, %n
def welford_symbolic(fd):
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
    avg, var_sum, n = fd.ops.welford(T0, [0, -1])
    fd.add_output(avg)
    fd.add_output(var_sum)
    fd.add_output(n)

# SYM: check %avg: PASS f32[7]
# SYM: check %var_sum: PASS f32[7]
# SYM: check %n: PASS i64[7]
# SEG:     segment @g0 reduction
# SEG-NOT: segment @g1

# -----

# CHECK-LABEL: fusion @welford_const
# CHECK-NEXT: %T0 = input f64[3, 4]
# CHECK-NEXT: %_T0, %avg = var_mean %T0 {axes=[1], correction=0} : f64[3], f64[3]
# CHECK-NEXT: %n = full 4 : i64[3]
# CHECK-NEXT: %_T1 = cast %n : f64[3]
# CHECK-NEXT: %var_sum = mul %_T0, %_T1 : f64[3]
# CHECK-NEXT: output %avg, %var_sum, %n
def welford_const(fd):
    T0 = fd.define_tensor(shape=[3, 4], contiguity=[True, True], dtype=DataType.Double)
    avg, var_sum, n = fd.ops.welford(T0, dims=[1])
    fd.add_output(avg)
    fd.add_output(var_sum)
    fd.add_output(n)

inputs = [torch.ones(3, 4, dtype=torch.float64, device='cuda')]

# CONST:      output %avg: f64[3]
# CONST-NEXT: values: [1.0, 1.0, 1.0]
# CONST:      output %var_sum: f64[3]
# CONST-NEXT: values: [0.0, 0.0, 0.0]
# CONST:      output %n: i64[3]
# CONST-NEXT: values: [4, 4, 4]
# CONST:      check %avg: PASS
# CONST:      check %var_sum: PASS
# CONST:      check %n: PASS
