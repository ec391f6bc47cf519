# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_allocation_domain_concretization (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def allocation_domain_concretization(fd: FusionDefinition) -> None:
    T1 = fd.define_tensor(shape=[1, -1, 1, 1], contiguity=[True, None, None, None], dtype=DataType.Double, is_cpu=False, stride_order=[0, 3, 2, 1])
    S1 = fd.define_scalar(2.0, dtype=DataType.Double)
    T2 = fd.ops.mul(T1, S1)
    fd.add_output(T2)

inputs = [torch.randn((0,), dtype=torch.float64, device='cuda:0').as_strided((1, 0, 1, 1), (0, 1, 1, 1))]
