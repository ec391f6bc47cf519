# RUN: fuser-translate --from=nvfuser-py --split-input-file %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py --function=select_values %s -o %t.v.fir
# RUN: fuser-run --device=cpu --print-values=all %t.v.fir | FileCheck %s --check-prefix=VALUES
# RUN: fuser-run --device=kir --check %t.v.fir | FileCheck %s --check-prefix=VKIR
# RUN: fuser-translate --from=nvfuser-py --function=select_dims %s -o %t.d.fir
# RUN: fuser-run --device=kir --check --random --input=S=zeros %t.d.fir | FileCheck %s --check-prefix=DKIR
# RUN: not fuser-run --device=kir --no-repro %S/Inputs/select-oor.fir 2>&1 | FileCheck %s --check-prefix=OOR
# fd.ops.select(x, index, dim), torch.select: index_select with a
# one-element index (a `full` of the scalar index), then a squeeze of dim;
# a negative constant index counts from the end of a constant extent; a
# runtime index out of range is an error of the run.

# CHECK-LABEL: fusion @select_values
# CHECK:      %[[I:.*]] = full 3 : i64[1]
# CHECK-NEXT: %[[P:.*]] = index_select %T1, %[[I]] {dim=1} : i64[2, 1]
# CHECK-NEXT: %T2 = squeeze %[[P]] {dims=[1]} : i64[2]
# CHECK:      %[[J:.*]] = full 1 : i64[1]
# CHECK-NEXT: %[[Q:.*]] = index_select %T1, %[[J]] : i64[1, 5]
# CHECK-NEXT: %T3 = squeeze %[[Q]] {dims=[0]} : i64[5]
def select_values(fd):
    T0 = fd.ops.iota(10, 0, 1, dtype=DataType.Int)
    T1 = fd.ops.reshape(T0, [2, 5])
    T2 = fd.ops.select(T1, 3, 1)
    T3 = fd.ops.select(T1, -1, dim=0)
    fd.add_output(T2)
    fd.add_output(T3)

# VALUES:      output %T2: i64[2]
# VALUES-NEXT:   values: [3, 8]
# VALUES:      output %T3: i64[5]
# VALUES-NEXT:   values: [5, 6, 7, 8, 9]
# VKIR: check %T2: PASS i64[2]
# VKIR: check %T3: PASS i64[5]

# -----

# CHECK-LABEL: fusion @select_dims
# CHECK:      %S = input i64
# CHECK:      %[[K:.*]] = full %S : i64[1]
# CHECK-NEXT: %[[R:.*]] = index_select %T0, %[[K]] {dim=2} : f32[i0, i1, 1]
# CHECK-NEXT: %T1 = squeeze %[[R]] {dims=[2]} : f32[i0, i1]
def select_dims(fd):
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
    S = fd.define_scalar(dtype=DataType.Int)
    T1 = fd.ops.select(T0, S, 2)
    fd.add_output(T1)

# DKIR: check %T1: PASS f32[4, 4]
# OOR: error: 'index_select': an index in '%{{.*}}' is out of range for dim 2 of '%T0'
