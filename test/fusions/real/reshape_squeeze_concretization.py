# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_reshape_squeeze_concretization (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def reshape_squeeze_concretization(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.ops.slice(T0, start_indices=[0, 0, 0], end_indices=[1, 2, 4], strides=[1, 1, 1])
    S2 = fd.define_scalar(1, dtype=DataType.Int)
    S3 = fd.define_scalar(8, dtype=DataType.Int)
    T6 = fd.ops.reshape(T1, new_shape=[S2, S3])
    T7 = fd.ops.reshape(T6, new_shape=[S3])
    fd.add_output(T7)

inputs = [torch.randn((100,), dtype=torch.float32, device='cuda:0').as_strided((2, 5, 10), (50, 10, 1))]
