# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_basic (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def basic(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    c0 = fd.define_scalar(3.0)
    t2 = fd.ops.add(t0, t1)
    t3 = fd.ops.mul(t2, c0)
    t4 = fd.ops.sum(t3, [-1], False, DataType.Float)
    fd.add_output(t4)

inputs = [torch.ones(2, 4, 8, device='cuda'), torch.ones(2, 4, 8, device='cuda')]
