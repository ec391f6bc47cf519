# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_broadcast_mixing (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def broadcast_mixing(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t1_b = fd.ops.broadcast_in_dim(t1, [3, 3], [0])
    t2 = fd.ops.add(t0, t1_b)
    fd.add_output(t2)

inputs = [torch.randn(3, 1, device='cuda'), torch.randn(3, device='cuda')]
