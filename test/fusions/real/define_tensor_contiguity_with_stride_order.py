# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_define_tensor_contiguity_with_stride_order (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def define_tensor_contiguity_with_stride_order(fd: FusionDefinition) -> None:
    inp = fd.define_tensor([1, 2], contiguity=True, stride_order=[0, 1])
    out = fd.ops.add(inp, inp)
    fd.add_output(out)
