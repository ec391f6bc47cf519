# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue2664_repro1 (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def issue2664_repro1(fd: FusionDefinition) -> None:
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    S3 = fd.define_scalar(1.0, dtype=DataType.Double)
    T4 = fd.ops.add(T2, S3)
    S5 = fd.define_scalar(4194304, dtype=DataType.Int)
    T7 = fd.ops.broadcast_in_dim(T4, shape=[S5], broadcast_dims=[])
    T8 = fd.ops.mul(T1, T7)
    fd.add_output(T4, T2)
    fd.add_output(T8)

inputs = [torch.randn((4194304,), dtype=torch.float32, device='cuda:0').as_strided((4194304,), (1,)), torch.randn((1,), dtype=torch.float32, device='cuda:0').as_strided((), ())]
