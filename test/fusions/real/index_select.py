# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_index_select (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def index_select(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t2 = fd.from_pytorch(inputs[2])
    t3 = fd.ops.add(t0, t1)
    dim = 1  # the test runs every dim; this is one of them
    t4 = fd.ops.index_select(t3, t2, dim)
    fd.add_output(t4)

inputs = [torch.randn(8, 16, device='cuda'), torch.randn(8, 16, device='cuda'), torch.randint(0, 8, (6,), device='cuda').to(dtype=torch.long)]
