# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_integer_division (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def integer_division(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t2 = fd.ops.div(t0, t1)
    t3 = fd.ops.truediv(t0, t1)
    fd.add_output(t2)
    fd.add_output(t3)

# The divisor excludes zero here: nvFuser's test draws zeros too, where the GPU's
# quotient is unspecified (fuser makes an integer division by zero an error).
inputs = [torch.testing.make_tensor(1024, device='cuda', dtype=torch.long), torch.testing.make_tensor(1024, device='cuda', dtype=torch.long, exclude_zero=True)]
