# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_replaced_sizes_pr2714 (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def replaced_sizes_pr2714(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.exp(T0)
    T3 = fd.ops.tanh(T1)
    S4 = fd.define_scalar(4, dtype=DataType.Int)
    T6 = fd.ops.reshape(T2, new_shape=[S4])
    S7 = fd.define_scalar(4, dtype=DataType.Int)
    T9 = fd.ops.reshape(T3, new_shape=[S7])
    T10 = fd.ops.add(T6, T9)
    T11 = fd.ops.reciprocal(T0)
    T12 = fd.ops.mul(T3, T11)
    S13 = fd.define_scalar(2.0, dtype=DataType.Double)
    S14 = fd.ops.reciprocal(S13)
    T15 = fd.ops.mul(T10, S14)
    fd.add_output(T10)
    fd.add_output(T12)
    fd.add_output(T15)

inputs = [torch.randn((4,), dtype=torch.float32, device='cuda:0').as_strided((2, 2), (2, 1)), torch.randn((4,), dtype=torch.float32, device='cuda:0').as_strided((2, 2), (2, 1))]
