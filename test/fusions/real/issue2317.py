# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue2317 (commit 81c4b22fd750), reformatted; fd.from_pytorch(inputs[i]) written as the define_tensor each makes
from nvfuser import FusionDefinition, DataType
import torch

def issue2317(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[16, 25, 128, 64], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[16, 128, 1600], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[1600, 1600], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T10 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T11 = fd.ops.stride_order(T10, stride_order=[3, 2, 1, 0])
    T16 = fd.ops.reshape(T11, new_shape=T1.shape())
    T17 = fd.ops.linear(T16, T2)
    T33 = fd.ops.add(T17, T1)
    T33 = fd.ops.cast(T33, dtype=DataType.BFloat16)
    T34 = fd.ops.linear(T33, T2)
    T35 = fd.ops.add(T34, T33)
    fd.add_output(T35)

inputs = [torch.randn((16, 25, 128, 64), dtype=torch.bfloat16, device='cuda:0'), torch.randn((16, 128, 1600), dtype=torch.bfloat16, device='cuda:0'), torch.randn((1600, 1600), dtype=torch.bfloat16, device='cuda:0')]
