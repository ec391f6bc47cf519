# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_define_contiguous_tensor (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def define_contiguous_tensor(fd: FusionDefinition) -> None:
    inp = fd.define_tensor([2, 3], contiguity=True)
    out = fd.ops.add(inp, inp)
    fd.add_output(out)
