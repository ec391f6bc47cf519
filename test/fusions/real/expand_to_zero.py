# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_expand_to_zero (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def expand_to_zero(fd: FusionDefinition) -> None:
    T0 = fd.from_pytorch(inputs[0])
    T1 = fd.from_pytorch(inputs[1])
    T2 = fd.ops.broadcast_in_dim(T0, shape=[0, 0], broadcast_dims=[0, 1])
    T3 = fd.ops.broadcast_in_dim(T1, shape=[0, 0], broadcast_dims=[0, 1])
    fd.add_output(T2)
    fd.add_output(T3)

inputs = [torch.zeros((1, 0), dtype=torch.float32, device='cuda:0'), torch.zeros((1, 1), dtype=torch.float32, device='cuda:0')]
