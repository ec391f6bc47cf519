from nvfuser import FusionDefinition, DataType
import torch

def nonzero(fd: FusionDefinition) -> None:
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    fd.add_output(fd.ops.div(t1, t1))
    t2 = fd.from_pytorch(inputs[2])
    fd.add_output(fd.ops.div(t2, t0))

inputs = [torch.testing.make_tensor(256, device='cuda', dtype=torch.long, exclude_zero=True), torch.testing.make_tensor(64, dtype=torch.int32, device='cuda', low=-1, high=1, exclude_zero=True), torch.testing.make_tensor(256, device='cuda', dtype=torch.long)]
