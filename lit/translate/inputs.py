# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py %s -o %t.fir
# RUN: fuser-translate --to=nvfuser-py %t.fir | FileCheck %s --check-prefix=PY
# RUN: fuser-translate --to=nvfuser-py %t.fir -o %t.py
# RUN: fuser-translate --from=nvfuser-py %t.py -o %t2.fir
# RUN: diff %t.fir %t2.fir
# The inputs list becomes example data: sizes, strides, dtype and how the
# data is made; the seed is the input's position.
import torch
from nvfuser import FusionDefinition, DataType

def inputs_fusion(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(None, dtype=DataType.Double)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    S2 = fd.define_scalar(None, dtype=DataType.Bool)
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float)
    T4 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16)
    T5 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
    T6 = fd.define_tensor(shape=[-1, -1], contiguity=[True, False], dtype=DataType.Half, stride_order=[0, 1])
    T7 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
    T8 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(T3)

# CHECK-LABEL: fusion @inputs_fusion {
# CHECK-NEXT:    %S0 = input f64 {example=2.0}
# CHECK-NEXT:    %S1 = input i64 {example=-3}
# CHECK-NEXT:    %S2 = input bool {example=true}
# CHECK-NEXT:    %T3 = input f32[i0, i1] {contiguity=[false, false], example=randn, seed=3, example_shape=[6, 4], example_strides=[1, 6]}
# CHECK-NEXT:    %T4 = input bf16[i2, i3, i4] {contiguity=[true, true, true], example=randn, seed=4, example_shape=[4, 2, 3]}
# CHECK-NEXT:    %T5 = input i64[i5] {contiguity=[true], example=randint, seed=5, low=0, high=10, example_shape=[5]}
# CHECK-NEXT:    %T6 = input f16[i6, i7] {stride_order=[0, 1], contiguity=[false, true], example=randn, seed=6, example_shape=[3, 4], example_strides=[1, 3]}
# CHECK-NEXT:    %T7 = input f32[i8, 1] {contiguity=[true, none], example=zeros, example_shape=[5, 1]}
# CHECK-NEXT:    %T8 = input f32[i9, i10] {contiguity=[true, true], example=rand, seed=8, example_shape=[2, 2]}
# CHECK-NEXT:    output %T3

with FusionDefinition() as fd:
    inputs_fusion(fd)

inputs = [
    2,          # an int for a Double scalar
    -3,
    True,
    torch.randn(4, 6, device="cuda").t(),
    torch.testing.make_tensor((2, 3, 4), dtype=torch.bfloat16, device="cuda:0").permute(2, 0, 1).contiguous(),
    torch.randint(0, 10, (5,), device="cuda"),
    torch.randn(120, dtype=torch.float16, device="cuda:0").as_strided((3, 4), (1, 3)),
    torch.zeros(5, 1, device="cuda"),
    torch.empty_strided((2, 2), (2, 1), dtype=torch.float32, device="cuda").uniform_(),
]
fd.execute(inputs)

# PY:      inputs = [
# PY-NEXT:     2.0,
# PY-NEXT:     -3,
# PY-NEXT:     True,
# PY-NEXT:     torch.randn(24, dtype=torch.float32, device="cuda").as_strided((6, 4), (1, 6)),
# PY-NEXT:     torch.randn(4, 2, 3, dtype=torch.bfloat16, device="cuda"),
# PY-NEXT:     torch.randint(0, 10, (5,), dtype=torch.int64, device="cuda"),
# PY-NEXT:     torch.randn(12, dtype=torch.float16, device="cuda").as_strided((3, 4), (1, 3)),
# PY-NEXT:     torch.zeros(5, 1, dtype=torch.float32, device="cuda"),
# PY-NEXT:     torch.rand(2, 2, dtype=torch.float32, device="cuda"),
# PY-NEXT: ]
# PY-NEXT: fd.execute(inputs)
