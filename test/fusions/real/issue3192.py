# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue3192 (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def issue3192(fd: FusionDefinition) -> None:
    inp = fd.define_tensor([1, 1, 2], contiguity=True)
    out = fd.ops.squeeze(inp, [0, 1])
    out = fd.ops.slice(out, [1], [2])
    fd.add_output(out)
