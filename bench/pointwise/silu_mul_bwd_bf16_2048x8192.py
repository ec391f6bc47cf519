# issue 15: the backward of the SiLU-and-mul of a Llama MLP (bf16 in and out, f32 compute):
# d(gate) and d(up) from the incoming gradient
# peer: silu_mul_bwd_bf16_2048x8192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.cast(T2, dtype=DataType.Float)
    T6 = fd.ops.neg(T4)
    T7 = fd.ops.exp(T6)
    S8 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T9 = fd.ops.add(S8, T7)
    T10 = fd.ops.reciprocal(T9)
    T11 = fd.ops.mul(T4, T10)
    T12 = fd.ops.mul(T3, T11)
    T13 = fd.ops.cast(T12, dtype=DataType.BFloat16)
    T14 = fd.ops.mul(T3, T5)
    T15 = fd.ops.sub(S8, T10)
    T16 = fd.ops.mul(T4, T15)
    T17 = fd.ops.add(S8, T16)
    T18 = fd.ops.mul(T10, T17)
    T19 = fd.ops.mul(T14, T18)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    fd.add_output(T20)
    fd.add_output(T13)


inputs = [
    torch.randn(2048, 8192, dtype=torch.bfloat16, device='cuda'),
    torch.randn(2048, 8192, dtype=torch.bfloat16, device='cuda'),
    torch.randn(2048, 8192, dtype=torch.bfloat16, device='cuda'),
]
