# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue2853 (commit 81c4b22fd750), reformatted; its inputs list (torch.tensor on the CPU) left out; fd.from_pytorch(inputs[i]) written as the define_tensor each makes
from nvfuser import FusionDefinition, DataType
import torch

def issue2853(fd: FusionDefinition) -> None:
    tv0 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
    tv1 = fd.define_tensor(shape=[3], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    s0 = fd.define_scalar(3.0)
    t2 = fd.ops.add(tv0, s0)
    t3 = fd.ops.add(tv1, s0)
    fd.add_output(t2)
    fd.add_output(t3)

