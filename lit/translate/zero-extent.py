# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# A 0 extent makes a shape's element count 0 however large the other
# extents are: the reshape solver and inference must not call it overflow.

def zero(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4294967296, 4294967296, 0], contiguity=[True, True, True], dtype=DataType.Float)
    T1 = fd.ops.reshape(T0, new_shape=[-1, 5])
    fd.add_output(T1)
# CHECK-LABEL: fusion @zero
# CHECK: reshape %{{.*}} : f32[0, 5]
