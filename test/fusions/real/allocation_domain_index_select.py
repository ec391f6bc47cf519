# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_allocation_domain_index_select (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def allocation_domain_index_select(fd: FusionDefinition) -> None:
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[0, 1])
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False)
    T3 = fd.ops.index_select(T1, T2, dim=1)
    fd.add_output(T3)

inputs = [torch.randn((252,), dtype=torch.float32, device='cuda:0').as_strided((9, 28), (1, 9)), torch.randint(0, 28, (4,), dtype=torch.int64, device='cuda:0')]
