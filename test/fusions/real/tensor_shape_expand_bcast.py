# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_tensor_shape_expand_bcast (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def tensor_shape_expand_bcast(fd: FusionDefinition) -> None:
    t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True])
    t1 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True])
    t2 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True])
    t1_b = fd.ops.broadcast_in_dim(t1, t0.shape(), [0, 1, 2])
    t2_b = fd.ops.broadcast_in_dim(t2, t1_b.shape(), [0, 1, 2])
    fd.add_output(t2_b)

inputs = [torch.randn(2, 3, 4, device='cuda'), torch.randn(2, 1, 4, device='cuda'), torch.randn(2, 1, 4, device='cuda')]
