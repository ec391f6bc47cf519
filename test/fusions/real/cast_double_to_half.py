# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_cast_double_to_half (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def cast_double_to_half(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t0h = fd.ops.cast(t0, DataType.Half)
    t1h = fd.ops.cast(t1, DataType.Half)
    t2 = fd.ops.add(t0h, t1h)
    t3 = fd.ops.relu(t2)
    t4 = fd.ops.cast(t3, DataType.Half)
    fd.add_output(t4)

inputs = [torch.randn(2, 4, device='cuda', dtype=torch.float64), torch.randn(2, 4, device='cuda', dtype=torch.float64)]
