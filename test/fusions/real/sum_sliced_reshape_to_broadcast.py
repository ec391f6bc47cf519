# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_sum_sliced_reshape_to_broadcast (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def sum_sliced_reshape_to_broadcast(fd: FusionDefinition) -> None:
    T18 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Float, is_cpu=False)
    S91 = fd.define_scalar(12, dtype=DataType.Int)
    S92 = fd.define_scalar(128, dtype=DataType.Int)
    S93 = fd.define_scalar(25, dtype=DataType.Int)
    S94 = fd.define_scalar(32, dtype=DataType.Int)
    S95 = fd.define_scalar(2, dtype=DataType.Int)
    T97 = fd.ops.reshape(T18, new_shape=[S91, S92, S93, S94, S95])
    T98 = fd.ops.slice(T97, start_indices=[0, 0, 0, 0, 0], end_indices=[12, 128, 25, 32, 1], strides=[1, 1, 1, 1, 1])
    T89 = fd.ops.sum(T98, dims=[4], keepdim=False, dtype=DataType.Null)
    fd.add_output(T89)

inputs = [torch.randn((24, 128, 25, 32), dtype=torch.float32, device='cuda:0')]
