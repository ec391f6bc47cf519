# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_inplace_update_on_non_contiguous_inputs (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def inplace_update_on_non_contiguous_inputs(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[2, 2], contiguity=[False, True], dtype=DataType.Float, is_cpu=False, stride_order=[0, 1])
    S1 = fd.define_scalar(0.0, dtype=DataType.Double)
    T2 = fd.ops.gt(T0, S1)
    S3 = fd.define_scalar(0.0, dtype=DataType.Double)
    T4 = fd.ops.where(T2, T0, S3)
    T5 = fd.ops.cast(T4, dtype=DataType.Float)
    T6 = fd.ops.set(T5)
    fd.add_output(T6, T0)
    fd.add_output(T6)

inputs = [torch.randn(5, dtype=torch.float32, device='cuda:0').as_strided((2, 2), (1, 3))]
