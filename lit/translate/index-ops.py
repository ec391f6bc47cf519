# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: not fuser-translate --from=nvfuser-py %S/Inputs/embedding-max-norm.py 2>&1 | FileCheck %s --check-prefix=MAXNORM
# RUN: fuser-translate --to=nvfuser-py %S/../ir/index-ops.fir | FileCheck %s --check-prefix=EXPORT
# The indexing ops import with nvFuser's argument order (index_select,
# gather and take_along_axis: arg, index, dim; embedding_fwd: input,
# weight, then options), and a negative dim counts from the end.

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int32)
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
    W = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    T4 = fd.ops.index_select(T0, T1, dim=-1)
    T5 = fd.ops.gather(T0, T2, 0)
    T6 = fd.ops.take_along_axis(T0, T3, dim=1)
    T7 = fd.ops.embedding_fwd(T2, W, None, None, 2.0, False, False)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T7)
# take_along_axis's index shares the lookup's extent outside dim
# CHECK:      %T3 = input i64[i0, i5]
# CHECK:      %T4 = index_select %T0, %T1 {dim=1} : f32[i0, i2]
# CHECK-NEXT: %T5 = gather %T0, %T2 : f32[i3, i4]
# CHECK-NEXT: %T6 = take_along_axis %T0, %T3 {dim=1} : f32[i0, i5]
# CHECK-NEXT: %T7 = embedding_fwd %T2, %W : bf16[i3, i4, i7]

# MAXNORM: embedding-max-norm.py:6:44: error: unsupported argument 'max_norm' of 'fd.ops.embedding_fwd' (it renormalizes the weight in place)

# EXPORT:      a = fd.ops.index_select(X, I, dim=1)
# EXPORT-NEXT: b = fd.ops.index_select(X, I, dim=0)
# EXPORT-NEXT: c = fd.ops.gather(X, J, dim=1)
# EXPORT-NEXT: d = fd.ops.take_along_axis(X, K, dim=1)
# EXPORT-NEXT: e = fd.ops.embedding_fwd(E, W, None, None, None, None, None)
