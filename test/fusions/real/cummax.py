# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_cummax (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def cummax(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    dim = 0  # the test runs every dim; this is one of them
    t1 = fd.ops.cummax(t0, dim)
    fd.add_output(t1)

inputs = [torch.randn(8, 16, device='cuda')]
