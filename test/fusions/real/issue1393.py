# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue1393 (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def issue1393(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[None, None, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, None], dtype=DataType.Half, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Half, is_cpu=False)
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.cast(T2, dtype=DataType.Float)
    T5 = fd.ops.mul(T3, T4)
    T6 = fd.ops.cast(T5, dtype=DataType.Half)
    S7 = fd.define_scalar(3, dtype=DataType.Int)
    S8 = fd.define_scalar(4, dtype=DataType.Int)
    S9 = fd.define_scalar(1, dtype=DataType.Int)
    T11 = fd.ops.reshape(T6, new_shape=[S7, S8, S9])
    S12 = fd.define_scalar(3, dtype=DataType.Int)
    S13 = fd.define_scalar(4, dtype=DataType.Int)
    S14 = fd.define_scalar(5, dtype=DataType.Int)
    T16 = fd.ops.broadcast_in_dim(T11, shape=[S12, S13, S14], broadcast_dims=[0, 1, 2])
    T17 = fd.ops.cast(T16, dtype=DataType.Float)
    T18 = fd.ops.cast(T0, dtype=DataType.Float)
    T19 = fd.ops.mul(T17, T18)
    T20 = fd.ops.cast(T19, dtype=DataType.Half)
    fd.add_output(T20)

inputs = [torch.randn((5,), dtype=torch.float16, device='cuda:0').as_strided((3, 4, 5), (0, 0, 1)), torch.randn((3,), dtype=torch.float16, device='cuda:0').as_strided((3, 4), (1, 0)), torch.randn((4,), dtype=torch.float16, device='cuda:0').as_strided((3, 4), (0, 1))]
