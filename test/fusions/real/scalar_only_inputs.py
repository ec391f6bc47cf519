# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_scalar_only_inputs (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def scalar_only_inputs(fd: FusionDefinition) -> None:
    s0 = fd.define_scalar()
    s1 = fd.define_scalar()
    s2 = fd.ops.add(s0, s1)
    c0 = fd.define_scalar(1.0, DataType.Float)
    t3 = fd.ops.full(shape=[2, 2], fill_value=c0, dtype=DataType.Float)
    t4 = fd.ops.mul(t3, s2)
    fd.add_output(t4)
