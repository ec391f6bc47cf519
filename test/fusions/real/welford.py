# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_welford (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def welford(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    mean, var_sum, n = fd.ops.welford(t0, [-1])
    var = fd.ops.div(var_sum, n)
    fd.add_output(var)
    fd.add_output(mean)

inputs = [torch.randn(2, 2, device='cuda')]
