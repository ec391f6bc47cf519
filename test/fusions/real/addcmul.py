# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_addcmul (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def addcmul(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t2 = fd.from_pytorch(inputs[2])
    c0 = fd.define_scalar(0.1)
    t3 = fd.ops.addcmul(t0, t1, t2, c0)
    fd.add_output(t3)

inputs = [torch.randn(4, device='cuda', dtype=torch.float32), torch.randn(4, device='cuda', dtype=torch.float32), torch.randn(4, device='cuda', dtype=torch.float32)]
