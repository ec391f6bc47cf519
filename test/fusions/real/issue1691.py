# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue1691 (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def issue1691(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[1, -1, -1], contiguity=True, dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.sum(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.sum(T0, dims=[1, 0], keepdim=False, dtype=DataType.Null)
    S4 = fd.define_scalar(4, dtype=DataType.Int)
    T6 = fd.ops.reshape(T2, new_shape=[S4])
    S7 = fd.define_scalar(4, dtype=DataType.Int)
    T9 = fd.ops.reshape(T3, new_shape=[S7])
    T10 = fd.ops.mul(T6, T9)
    T11 = fd.ops.sum(T10, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T11)

inputs = [torch.randn((12,), dtype=torch.float32, device='cuda:0').as_strided((1, 3, 4), (12, 4, 1)), torch.randn((12,), dtype=torch.float32, device='cuda:0').as_strided((4, 3), (3, 1))]
