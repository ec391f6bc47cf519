# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_broadcast_and_stride_order (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def broadcast_and_stride_order(fd: FusionDefinition) -> None:
    T0 = fd.from_pytorch(inputs[0])
    T1 = fd.ops.broadcast(T0, is_broadcast_dim=[False, True, False, False])
    T2 = fd.ops.stride_order(T1, stride_order=[0, 1, 2, 3])
    fd.add_output(T2)

inputs = [torch.randn(2, 3, 4, dtype=torch.float32, device='cuda:0')]
