# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue2549 (commit 81c4b22fd750), reformatted; a = torch.ones(4, 1) and b = torch.ones(4, 4) written in
from nvfuser import FusionDefinition, DataType
import torch

def issue2549(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(sizes=[4, 1], strides=[1, 1], dtype=DataType.Double, is_cpu=False)
    T1 = fd.define_tensor(sizes=[4, 4], strides=[4, 1], dtype=DataType.Double, is_cpu=False)
    T2 = fd.ops.broadcast_in_dim(T0, shape=[4, 4], broadcast_dims=[0, 1])
    T3 = fd.ops.div(T1, T2)
    fd.add_output(T3)
