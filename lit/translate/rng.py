# RUN: fuser-translate --from=nvfuser-py %s 2>%t.err | FileCheck %s
# RUN: FileCheck %s --check-prefix=WARN < %t.err
# RUN: fuser-translate --from=nvfuser-py %s -o %t.fir 2>/dev/null
# RUN: fuser-translate --to=nvfuser-py %t.fir | FileCheck %s --check-prefix=PY
# RUN: fuser-translate --to=nvfuser-py %t.fir -o %t.py
# RUN: fuser-translate --from=nvfuser-py %t.py -o %t2.fir
# RUN: diff %t.fir %t2.fir
# RUN: fuser-run %t.fir --device=kir --check --random | FileCheck %s --check-prefix=KIR
# Random numbers: uniform and normal with rng_seed and rng_offset scalars,
# rand_like and randn_like, the stateful form (no seed: a warning, seed 0
# and one offset per op), and dropout as Thunder writes it.
import torch
from nvfuser import FusionDefinition, DataType

def dropout(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    S3 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S4 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S5 = fd.ops.size(T0, dims=0)
    S6 = fd.ops.size(T0, dims=1)
    T7 = fd.ops.uniform(S3, S4, shape=[S5, S6], rng_seed=S2, rng_offset=S1, dtype=DataType.BFloat16)
    S8 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T9 = fd.ops.lt(T7, S8)
    T10 = fd.ops.cast(T0, dtype=DataType.Float)
    T11 = fd.ops.cast(T9, dtype=DataType.Float)
    T12 = fd.ops.mul(T10, T11)
    S13 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T14 = fd.ops.mul(T12, S13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T15)
    fd.add_output(T9)

inputs = [torch.randn(16, 40, dtype=torch.bfloat16, device='cuda'), 7, 2024]

# CHECK-LABEL: fusion @dropout {
# CHECK-NEXT:    %T0 = input bf16[i0, i1] {{.*}}
# CHECK-NEXT:    %S1 = input i64 {example=7}
# CHECK-NEXT:    %S2 = input i64 {example=2024}
# CHECK-NEXT:    %T7 = uniform 0.0, 1.0, %S2, %S1 : bf16[i0, i1]
# CHECK-NEXT:    %T9 = lt %T7, 0.9 : bool[i0, i1]

# PY: T{{[0-9]+}} = fd.ops.uniform(S{{[0-9]+}}, S{{[0-9]+}}, shape=[{{.*}}], rng_seed=S2, rng_offset=S1, dtype=DataType.BFloat16)
# KIR: check %T15: PASS bf16[16, 40]; max abs err 0,
# KIR: check %T9: PASS bool[16, 40]

def random_forms(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4, 6], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    S3 = fd.define_scalar(2.0, dtype=DataType.Double)
    S4 = fd.define_scalar(0.5, dtype=DataType.Double)
    T5 = fd.ops.normal(S3, S4, shape=[4, 6], rng_seed=S1, rng_offset=S2, dtype=DataType.Double)
    T6 = fd.ops.rand_like(T0, rng_seed=S1, rng_offset=S2)
    T7 = fd.ops.randn_like(T0)
    T8 = fd.ops.uniform(-1.0, 1.0, shape=[4, 6])
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T7)
    fd.add_output(T8)

# CHECK-LABEL: fusion @random_forms {
# CHECK:         %T5 = normal 2.0, 0.5, %S1, %S2 : f64[4, 6]
# CHECK-NEXT:    %T6 = uniform 0.0, 1.0, %S1, %S2 : f32[4, 6]
# CHECK-NEXT:    %T7 = normal 0.0, 1.0, 0, 0 : f32[4, 6]
# CHECK-NEXT:    %T8 = uniform -1.0, 1.0, 0, 1 : f32[4, 6]

# WARN: warning: 'fd.ops.randn_like' without rng_seed and rng_offset: fuser has no generator state, so it takes seed 0 and offset 0
# WARN: warning: 'fd.ops.uniform' without rng_seed and rng_offset: fuser has no generator state, so it takes seed 0 and offset 1
# KIR-LABEL: fusion @random_forms
# KIR: check %T5: PASS f64[4, 6]; max abs err 0,
# KIR: check %T6: PASS f32[4, 6]; max abs err 0,
