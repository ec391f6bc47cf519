# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py %s --function=legacy | FileCheck %s --check-prefix=ONLY
# The subset of Python that nvFuser, Thunder and the seeds print: comments,
# bracketed line continuation, keyword or positional arguments, nested calls,
# arithmetic on tensors, constants, vectors and tensor sizes.
import torch
from nvfuser import (FusionDefinition,
                     DataType)


def current(fd : FusionDefinition) -> None :
    """A docstring is fine."""
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False,
                          stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[1, -1],  # a broadcast dim
                          contiguity=[None, True], dtype=DataType.BFloat16)
    S2 = fd.define_scalar(None, dtype=DataType.Double)
    S3 = fd.define_scalar(1e-05, dtype=DataType.Double)
    S4 = fd.define_scalar(2, dtype=DataType.Int32)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, DataType.Float)
    T7 = fd.ops.add(T5, T6)
    T8, T9 = fd.ops.var_mean(T7, dims=[-1], correction=0, keepdim=False)
    T10 = fd.ops.broadcast_in_dim(T9, shape=[T0_rows, 1], broadcast_dims=[0]) if False else fd.ops.broadcast_in_dim(T9, shape=[-1, 1], broadcast_dims=[0])
    fd.add_output(T10)

# CHECK-LABEL: fusion @current {
# CHECK-NEXT:    %T0 = input bf16[i0, i1] {stride_order=[1, 0], contiguity=[true, true]}
