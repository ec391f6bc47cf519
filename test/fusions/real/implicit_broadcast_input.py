# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_implicit_broadcast_input (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def implicit_broadcast_input(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t0_b = fd.ops.broadcast_in_dim(t0, [2, 3, 4], [1])
    t2 = fd.ops.add(t0_b, t1)
    fd.add_output(t2)

inputs = [torch.randn(3, device='cuda'), torch.randn(2, 3, 4, device='cuda')]
