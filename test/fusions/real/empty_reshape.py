# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_empty_reshape (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def empty_reshape(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, 1, -1, -1, -1], contiguity=[False, None, True, True, True], dtype=DataType.Int, is_cpu=False, stride_order=[4, 3, 2, 1, 0])
    S2 = fd.define_scalar(5, dtype=DataType.Int)
    S3 = fd.define_scalar(0, dtype=DataType.Int)
    T5 = fd.ops.reshape(T0, new_shape=[S2, S3])
    fd.add_output(T5)

inputs = [torch.randint(0, 10, (0, 1, 2, 3, 4), dtype=torch.int64, device='cuda:0')]
