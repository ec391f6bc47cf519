# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue3369 (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def issue3369(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[5, 5], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[5, 5], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[5], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T3 = fd.ops.linear(T0, T1, T2)
    fd.add_output(T3)

inputs = [torch.testing.make_tensor((5, 5), dtype=torch.float32, device='cuda:0'), torch.testing.make_tensor((5, 5), dtype=torch.float32, device='cuda:0'), torch.testing.make_tensor((5,), dtype=torch.float32, device='cuda:0')]
