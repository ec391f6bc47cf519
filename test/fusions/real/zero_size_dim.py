# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_zero_size_dim (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def zero_size_dim(fd: FusionDefinition) -> None:
    t0 = fd.define_tensor(shape=[0, 0], contiguity=[True, True], dtype=DataType.Float)
    t1 = fd.ops.relu(t0)
    fd.add_output(t1)

inputs = [torch.ones(0, 0, device='cuda')]
