# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_broadcast (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def broadcast(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t0_b = fd.ops.broadcast(t0, [True, False, True])
    t2 = fd.ops.add(t0_b, t1)
    fd.add_output(t2)

inputs = [torch.randn(3, device='cuda'), torch.randn(2, 3, 4, device='cuda')]
