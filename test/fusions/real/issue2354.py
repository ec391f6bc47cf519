# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue2354 (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def issue2354(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.ops.linear(T1, T0)
    S3 = fd.define_scalar(1.41421, dtype=DataType.Double)
    T4 = fd.ops.mul(T2, S3)
    fd.add_output(T2)
    fd.add_output(T4)

inputs = [torch.randn((8, 4), dtype=torch.float32, device='cuda:0'), torch.randn((6, 2, 4), dtype=torch.float32, device='cuda:0')]
