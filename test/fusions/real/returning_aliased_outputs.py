# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_returning_aliased_outputs (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def returning_aliased_outputs(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    S1 = fd.define_scalar(0.0, dtype=DataType.Double)
    T2 = fd.ops.gt(T0, S1)
    S3 = fd.define_scalar(0.0, dtype=DataType.Double)
    T4 = fd.ops.where(T2, T0, S3)
    fd.add_output(T4)
    fd.add_output(T4, T0)
    fd.add_output(T4)
    fd.add_output(T0)

inputs = [torch.randn((1, 2, 3, 4), dtype=torch.float32, device='cuda:0')]
