# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py %s | fuser-translate --to=nvfuser-py | fuser-translate --from=nvfuser-py | FileCheck %s
# A reshape from [a, b] to [a, a] (symbolic): the element counts agree only
# when b is a, so the importer unifies them. Exported scripts depend on it:
# a square input ([i0, i0], from a broadcast later in the fusion) is
# written back with shape=[-1, -1], and its reshape to [size(T0, 0),
# size(T0, 0)] must import again.
# CHECK: %T0 = input f32[i0, i0]
# CHECK: %T3 = reshape %T2 : f32[i0, i0]
def f(fd):
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.add(T0, T1)
    S0 = fd.ops.size(T0, dim=0)
    T3 = fd.ops.reshape(T2, new_shape=[S0, S0])
    fd.add_output(T3)
