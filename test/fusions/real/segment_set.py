# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_segment_set (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def segment_set(fd: FusionDefinition) -> None:
    T0 = fd.from_pytorch(inputs[0])
    T1 = fd.ops.neg(T0)
    T2 = fd.ops.segment_set(T1)
    T3 = fd.ops.relu(T2)
    fd.add_output(T3)

inputs = [torch.randn(5, 5, 5, device='cuda')]
