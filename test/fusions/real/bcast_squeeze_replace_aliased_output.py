# Source: NVIDIA/Fuser tests/python/direct/test_python_frontend.py::test_bcast_squeeze_replace_aliased_output (commit 81c4b22fd750), reformatted
from nvfuser import FusionDefinition, DataType
import torch

def bcast_squeeze_replace_aliased_output(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[1, 1, 576], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 576], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T5 = fd.ops.reshape(T0, new_shape=[1, 576])
    T6 = fd.ops.set(T5)
    fd.add_output(T6, T1)
    fd.add_output(T5)

inputs = [torch.testing.make_tensor((1, 1, 576), dtype=torch.bfloat16, device='cuda:0'), torch.testing.make_tensor((1, 576), dtype=torch.bfloat16, device='cuda:0')]
