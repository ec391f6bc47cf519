# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_expanded_to_size_one (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def expanded_to_size_one(fd: FusionDefinition) -> None:
    tv0 = fd.define_tensor(shape=[1, -1], contiguity=[None, None], dtype=DataType.Int)
    fd.add_output(tv0)

inputs = [torch.randint(0, 10, (1, 1), device='cuda')]
