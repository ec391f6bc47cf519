# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_input_scalar (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def input_scalar(fd: FusionDefinition) -> None:
    T0 = fd.from_pytorch(inputs[0])
    S1 = fd.define_scalar()
    T1 = fd.ops.mul(T0, S1)
    fd.add_output(T1)

inputs = [torch.randn((3,), dtype=torch.float32, device='cuda:0'), 0.1]
