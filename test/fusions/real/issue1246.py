# Source: NVIDIA/Fuser tests/python/direct/test_repro.py::test_issue1246 (commit 81c4b22fd750), reformatted; the loop over final_mul unrolled with final_mul=True
from nvfuser import FusionDefinition, DataType
import torch

def issue1246(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, True, False, True], dtype=DataType.Float, is_cpu=False)
    S2 = fd.define_scalar(2.0, dtype=DataType.Double)
    T3 = fd.ops.mul(T0, S2)
    T4 = fd.ops.cat([T3, T1], dim=-1)
    S3 = fd.define_scalar(1.0, dtype=DataType.Double)
    T5 = fd.ops.mul(T4, S3)
    fd.add_output(T5)

inputs = [torch.randn((8388608,), dtype=torch.float32, device='cuda:0').as_strided((1, 32, 2048, 128), (8388608, 262144, 128, 1)), torch.randn((0,), dtype=torch.float32, device='cuda:0').as_strided((1, 32, 2048, 0), (8388608, 262144, 128, 1))]
