# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_pad_expanded_empty (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def pad_expanded_empty(fd: FusionDefinition) -> None:
    T0 = fd.from_pytorch(inputs[0])
    S1 = fd.define_scalar(-3.70753, dtype=DataType.Double)
    T2 = fd.ops.pad(T0, [0, 0, 1, 1, 1, 0], S1)
    fd.add_output(T2)

inputs = [torch.randn((0,), dtype=torch.float64, device='cuda:0').as_strided((2, 0, 3), (0, 0, 0))]
