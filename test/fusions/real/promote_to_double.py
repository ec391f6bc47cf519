# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_promote_to_double (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def promote_to_double(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t2 = fd.ops.add(t0, t1)
    t5 = fd.ops.relu(t2)
    fd.add_output(t5)

inputs = [torch.randn(2, 4, device='cuda', dtype=torch.float16), torch.randn(2, 4, device='cuda', dtype=torch.float64)]
