# linear -> SwiGLU -> linear, Llama's MLP as Thunder hands it to nvFuser
# (issue 16): the gate and up projections, silu(gate) * up in f32, cast to
# bf16, the down projection.  Four segments: three matmul segments
# (cuBLASLt) and one pointwise kernel for the SwiGLU between them.
# peer: linear_swiglu_linear bf16[256,4096] 11008
import torch
from nvfuser import FusionDefinition, DataType
def nvfuser_fusion_swiglu_mlp(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T4 = fd.ops.linear(T0, T1)
    T5 = fd.ops.linear(T0, T2)
    T6 = fd.ops.cast(T4, dtype=DataType.Float)
    T7 = fd.ops.neg(T6)
    T8 = fd.ops.exp(T7)
    S9 = fd.define_scalar(1.0, dtype=DataType.Double)
    T10 = fd.ops.add(S9, T8)
    T11 = fd.ops.reciprocal(T10)
    T12 = fd.ops.mul(T6, T11)
    T13 = fd.ops.cast(T5, dtype=DataType.Float)
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    T16 = fd.ops.linear(T15, T3)
    fd.add_output(T16)

inputs = [
    torch.randn(256, 4096, dtype=torch.bfloat16, device="cuda"),
    torch.randn(11008, 4096, dtype=torch.bfloat16, device="cuda"),
    torch.randn(11008, 4096, dtype=torch.bfloat16, device="cuda"),
    torch.randn(4096, 11008, dtype=torch.bfloat16, device="cuda"),
]
