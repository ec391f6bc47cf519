# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_cat (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def cat(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t2 = fd.from_pytorch(inputs[2])
    t3 = fd.from_pytorch(inputs[3])
    t3 = fd.ops.cat([t0, t1], 1)
    fd.add_output(t3)
    t4 = fd.ops.cat([t0, t2], 0)
    fd.add_output(t4)

inputs = [torch.randn(2, 4, device='cuda'), torch.randn(2, 3, device='cuda'), torch.randn(4, 4, device='cuda'), torch.randn(0, 4, device='cuda')]
