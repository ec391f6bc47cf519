# RMS norm -> linear, as Thunder hands Llama's attention input projection to
# nvFuser (issue 16): the norm in f32 with a weight, cast to bf16, then a
# linear without bias.  Two segments: the norm (persistent) and the
# projection (matmul, cuBLASLt).
# peer: rmsnorm_linear bf16[256,4096]x[4096,4096]
import torch
from nvfuser import FusionDefinition, DataType
def nvfuser_fusion_rmsnorm_linear(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.mul(T3, T3)
    T5 = fd.ops.sum(T4, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T5, shape=[T0.size(0), 1], broadcast_dims=[0])
    S7 = fd.define_scalar(4096.0, dtype=DataType.Double)
    T8 = fd.ops.div(T6, S7)
    S9 = fd.define_scalar(1e-06, dtype=DataType.Double)
    T10 = fd.ops.add(T8, S9)
    T11 = fd.ops.rsqrt(T10)
    T12 = fd.ops.broadcast_in_dim(T11, shape=[T0.size(0), T0.size(1)], broadcast_dims=[0, 1])
    T13 = fd.ops.mul(T3, T12)
    T14 = fd.ops.cast(T1, dtype=DataType.Float)
    T15 = fd.ops.broadcast_in_dim(T14, shape=[T0.size(0), T0.size(1)], broadcast_dims=[1])
    T16 = fd.ops.mul(T13, T15)
    T17 = fd.ops.cast(T16, dtype=DataType.BFloat16)
    T18 = fd.ops.linear(T17, T2)
    fd.add_output(T18)

inputs = [
    torch.randn(256, 4096, dtype=torch.bfloat16, device="cuda"),
    torch.randn(4096, dtype=torch.bfloat16, device="cuda"),
    torch.randn(4096, 4096, dtype=torch.bfloat16, device="cuda"),
]
