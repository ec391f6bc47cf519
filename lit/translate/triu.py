# RUN: fuser-translate --from=nvfuser-py --split-input-file %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py --function=triu_ones %s -o %t.ones.fir
# RUN: fuser-run --device=kir --check --default-extent=5 --print-values=all %t.ones.fir | FileCheck %s --check-prefix=ONES
# RUN: fuser-translate --from=nvfuser-py --function=triu_batched %s -o %t.b.fir
# RUN: fuser-run --device=kir --check --random --default-extent=6 %t.b.fir | FileCheck %s --check-prefix=BATCHED
# RUN: fuser-opt --pass=all %t.b.fir | FileCheck %s --check-prefix=SEG
# RUN: not fuser-translate --from=nvfuser-py %s.errors 2>&1 | FileCheck %s.errors
# fd.ops.triu(x, diagonal): torch.triu over the last two dims, imported as
# pointwise ops on two iotas (x where column - row >= diagonal, else 0): one
# pointwise kernel, checked against the interpreter on the CPU kernel path.

# CHECK-LABEL: fusion @triu_ones
# CHECK-NEXT: %T0 = input f32[i0, i1]
# CHECK-NEXT: %_T0 = iota 0, 1 : i64[i0]
# CHECK-NEXT: %_T1 = broadcast_in_dim %_T0 {broadcast_dims=[0]} : i64[i0, i1]
# CHECK-NEXT: %_T2 = iota 0, 1 : i64[i1]
# CHECK-NEXT: %_T3 = broadcast_in_dim %_T2 {broadcast_dims=[1]} : i64[i0, i1]
# CHECK-NEXT: %_T4 = sub %_T3, %_T1 : i64[i0, i1]
# CHECK-NEXT: %_T5 = ge %_T4, -1 : bool[i0, i1]
# CHECK-NEXT: %T1 = where %_T5, %T0, 0.0 : f32[i0, i1]
# CHECK-NEXT: output %T1
def triu_ones(fd):
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.triu(T0, -1)
    fd.add_output(T1)

inputs = [torch.ones(5, 5, device='cuda')]

# ONES:      output %T1: f32[5, 5]
# ONES-NEXT: values: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
# ONES:      check %T1: PASS f32[5, 5]

# -----

# The default diagonal is 0; a batch dim; ints stay ints.
# CHECK-LABEL: fusion @triu_batched
# CHECK:      %[[D:.*]] = ge %{{.*}}, 0 : bool[i0, i1, i2]
# CHECK-NEXT: %T1 = where %[[D]], %T0, 0 : i32[i0, i1, i2]
# CHECK:      %[[E:.*]] = ge %{{.*}}, 2 : bool[i0, i1, i2]
# CHECK-NEXT: %T2 = where %[[E]], %T0, 0 : i32[i0, i1, i2]
# CHECK-NEXT: output %T1, %T2
def triu_batched(fd):
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Int32)
    T1 = fd.ops.triu(T0)
    T2 = fd.ops.triu(T0, diagonal=2)
    fd.add_output(T1)
    fd.add_output(T2)

# BATCHED: check %T1: PASS i32[6, 6, 6]
# BATCHED: check %T2: PASS i32[6, 6, 6]
# SEG:     segment @g0 pointwise
# SEG-NOT: segment @g1
