# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py %s -o %t.fir
# RUN: fuser-translate --to=nvfuser-py %t.fir | FileCheck %s --check-prefix=PY
# fd.ops.logical_right_shift is the op logical_right_shift (an unsigned
# shift of the bits at the result dtype's width, lit/run/logical-shift.fir);
# its result promotes as the bitwise ops' do, and it exports to the same
# call.
from nvfuser import FusionDefinition, DataType

def lshr(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4], contiguity=[True], dtype=DataType.Int32)
    T1 = fd.define_tensor(shape=[4], contiguity=[True], dtype=DataType.Int)
    T2 = fd.ops.logical_right_shift(T0, 1)
    T3 = fd.ops.logical_right_shift(T0, T1)
    T4 = fd.ops.logical_right_shift(T1, 60)
    fd.add_output(T2)
    fd.add_output(T3)
    fd.add_output(T4)

# CHECK: %T2 = logical_right_shift %T0, 1 : i32[4]
# CHECK: %T3 = logical_right_shift %T0, %T1 : i64[4]
# CHECK: %T4 = logical_right_shift %T1, 60 : i64[4]
# PY: [[A:S[0-9]+]] = fd.define_scalar(1, dtype=DataType.Int)
# PY-NEXT: = fd.ops.logical_right_shift(T0, [[A]])
# PY-NEXT: = fd.ops.logical_right_shift(T0, T1)
# PY-NEXT: [[B:S[0-9]+]] = fd.define_scalar(60, dtype=DataType.Int)
# PY-NEXT: = fd.ops.logical_right_shift(T1, [[B]])
