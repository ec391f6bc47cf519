# RUN: not fuser-translate --from=nvfuser-py --split-input-file %s 2>&1 | FileCheck %s
# The importer's form for data filled into a layout,
# <tensor>.copy_(torch.from_numpy(numpy.load("f.npy"))): what it refuses.
# (What it reads is in lit/repro/mismatch-kir.test and with-inputs.fir.)
import torch
import numpy
from nvfuser import FusionDefinition, DataType

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    fd.add_output(T0)

inputs = [
    torch.randn(4, dtype=torch.float32).copy_(torch.ones(4)),
]
# CHECK: import-copy.py:[[@LINE-2]]:47: error: '.copy_' takes torch.from_numpy(numpy.load("file.npy")) in example data

# -----
import torch
import numpy
from nvfuser import FusionDefinition, DataType

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half)
    fd.add_output(T0)

inputs = [
    torch.randn(4, dtype=torch.float16).copy_(torch.from_numpy(numpy.load("h.npy")).view(torch.float16)),
]
# CHECK: import-copy.py:[[@LINE-2]]:47: error: only '.view(torch.bfloat16)' is supported on data loaded from a .npy file

# -----
import torch
import numpy
from nvfuser import FusionDefinition, DataType

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    fd.add_output(T0)

inputs = [
    torch.randn(4, dtype=torch.float32).copy_(torch.from_numpy(numpy.load("a.npy")), non_blocking=True),
]
# CHECK: import-copy.py:[[@LINE-2]]:5: error: unsupported input expression 'copy_'
