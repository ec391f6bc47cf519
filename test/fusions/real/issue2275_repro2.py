# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue2275_repro2 (commit 81c4b22fd750), reformatted; fd.from_pytorch(inputs[0]) written as the define_tensor it makes
from nvfuser import FusionDefinition, DataType
import torch

def issue2275_repro2(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[2, 32, 4096, 128], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.ops.slice(T0, start_indices=[0, 0, 0, 0], end_indices=[2, 32, 4096, 128], strides=[1, 1, 1, 1])
    T2 = fd.ops.slice(T1, start_indices=[0, 0, 0, 0], end_indices=[2, 32, 4096, 64], strides=[1, 1, 1, 1])
    T3 = fd.ops.slice(T1, start_indices=[0, 0, 0, 64], end_indices=[2, 32, 4096, 128], strides=[1, 1, 1, 1])
    T4 = fd.ops.cast(fd.ops.neg(T3), DataType.BFloat16)
    T5 = fd.ops.cat([T4, T2], dim=-1)
    T6 = fd.ops.add(fd.ops.sin(T5), fd.ops.cos(T5))
    T7 = fd.ops.cast(T6, DataType.BFloat16)
    T100 = fd.ops.slice(T0, start_indices=[0, 0, 0, 0], end_indices=[2, 32, 4096, 0], strides=[1, 1, 1, 1])
    T101 = fd.ops.cat([T7, T100], dim=-1)
    fd.add_output(T101)

inputs = [torch.randn((2, 32, 4096, 128), dtype=torch.bfloat16, device='cuda:0')]
