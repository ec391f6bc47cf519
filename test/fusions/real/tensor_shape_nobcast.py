# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_tensor_shape_nobcast (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def tensor_shape_nobcast(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    t1_b = fd.ops.broadcast_in_dim(t1, t0.shape(), [0, 1])
    t2 = fd.ops.add(t0, t1_b)
    fd.add_output(t2)

inputs = [torch.randn(2, 3, device='cuda'), torch.randn(2, 3, device='cuda')]
