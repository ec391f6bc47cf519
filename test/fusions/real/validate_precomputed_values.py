# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_validate_precomputed_values (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def validate_precomputed_values(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Double)
    T2 = fd.ops.ge(T0, S1)
    fd.add_output(T2)
