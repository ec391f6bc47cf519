# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_define_broadcast_tensor (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def define_broadcast_tensor(fd: FusionDefinition) -> None:
    inp = fd.define_tensor([1, 2, 1], contiguity=True)
    out = fd.ops.add(inp, inp)
    fd.add_output(out)
