# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue2755 (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def issue2755(fd: FusionDefinition) -> None:
    t0 = fd.define_tensor(shape=[-1])
    t1 = fd.ops.slice(t0, start_indices=[0], end_indices=[5])
    t2 = fd.ops.neg(t1)
    t3 = fd.ops.slice(t2, start_indices=[0], end_indices=[2])
    t4 = fd.ops.neg(t3)
    fd.add_output(t4)

inputs = [torch.randn((10,), dtype=torch.float32, device='cuda:0')]
