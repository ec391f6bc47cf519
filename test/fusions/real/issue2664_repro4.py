# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue2664_repro4 (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def issue2664_repro4(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.add(T1, T0)
    T4 = fd.ops.neg(T0)
    fd.add_output(T3)
    fd.add_output(T4, T0)

inputs = [torch.randn((4194304, 1), dtype=torch.float32, device='cuda:0'), torch.randn((4194304, 128), dtype=torch.float32, device='cuda:0')]
