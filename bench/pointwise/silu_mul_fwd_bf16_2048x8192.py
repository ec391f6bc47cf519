# issue 15: the SiLU-and-mul of a Llama MLP as Thunder sends it (bf16 in and out, f32 compute)
# peer: silu_mul_fwd_bf16_2048x8192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.neg(T2)
    T4 = fd.ops.exp(T3)
    S5 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T6 = fd.ops.add(S5, T4)
    T7 = fd.ops.reciprocal(T6)
    T8 = fd.ops.mul(T2, T7)
    T9 = fd.ops.cast(T1, dtype=DataType.Float)
    T10 = fd.ops.mul(T8, T9)
    T11 = fd.ops.cast(T10, dtype=DataType.BFloat16)
    fd.add_output(T11)


inputs = [
    torch.randn(2048, 8192, dtype=torch.bfloat16, device='cuda'),
    torch.randn(2048, 8192, dtype=torch.bfloat16, device='cuda'),
]
