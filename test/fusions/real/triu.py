# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_triu (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def triu(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.ops.triu(t0, -1)
    fd.add_output(t1)

inputs = [torch.randn(4, 16, device='cuda', dtype=torch.float16)]
