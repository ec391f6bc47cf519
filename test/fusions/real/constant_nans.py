# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_constant_nans (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def constant_nans(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    c0 = fd.define_scalar(float('nan'))
    t1 = fd.ops.add(t0, c0)
    fd.add_output(t1)

inputs = [torch.randn(4, 4, device='cuda')]
