# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_signbit (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def signbit(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t2 = fd.ops.where(fd.ops.signbit(t0), fd.ops.neg(fd.ops.abs(t1)), fd.ops.abs(t1))
    fd.add_output(t2)

inputs = [torch.randn(3, 4, 5, device='cuda', dtype=torch.float32), torch.randn(3, 4, 5, device='cuda', dtype=torch.float32)]
