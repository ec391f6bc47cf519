# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_mark_alias_pass (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def mark_alias_pass(fd: FusionDefinition) -> None:
    x = fd.define_tensor([2, 3, 4], contiguity=[True, True, True], dtype=DataType.Float)
    y = fd.ops.reshape(x, [2, 12])
    fd.add_output(y)
