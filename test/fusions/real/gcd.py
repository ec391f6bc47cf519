# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_gcd (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def gcd(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t2 = fd.ops.gcd(t0, t1)
    fd.add_output(t2)

inputs = [torch.testing.make_tensor(1024, device='cuda', dtype=torch.long), torch.testing.make_tensor(1024, device='cuda', dtype=torch.long)]
