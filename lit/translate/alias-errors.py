# RUN: not fuser-translate --from=nvfuser-py --split-input-file %s 2>&1 | FileCheck %s
# What fd.add_output(out, alias_input) refuses, located at the alias.
from nvfuser import FusionDefinition, DataType

# CHECK: alias-errors.py:[[@LINE+6]]:23: error: 'fd.add_output': alias_input '%T0' does not have the output's shape and dtype
def other_dtype(fd):
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T1 = fd.ops.cast(T0, dtype=DataType.Half)
    S2 = fd.define_scalar(2.0, dtype=DataType.Double)
    T3 = fd.ops.mul(T1, S2)
    fd.add_output(T3, T0)

# -----
# CHECK: alias-errors.py:[[@LINE+4]]:23: error: 'fd.add_output': alias_input '%T0_1' is not a fusion input as defined (an expanded input is an expand of one)
def expanded(fd):
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Float)
    T1 = fd.ops.neg(T0)
    fd.add_output(T1, T0)

inputs = [torch.randn(8, device="cuda").expand(6, 8)]
