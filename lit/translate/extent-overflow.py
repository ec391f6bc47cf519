# RUN: not fuser-translate --from=nvfuser-py --split-input-file %s 2>&1 | FileCheck %s
# Extent products in the importer are checked: an element count past 2^63-1
# is a located error that names the shapes as written, never a wrapped
# product (the sanitizer build aborts on signed overflow).

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4294967296, 4294967296], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.reshape(T0, new_shape=[-1])
    fd.add_output(T1)
# CHECK: extent-overflow.py:[[@LINE-2]]:25: error: the operand shape [4294967296, 4294967296] of 'fd.ops.reshape' has more than 2^63-1 elements

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4], contiguity=[True], dtype=DataType.Float)
    T1 = fd.ops.reshape(T0, new_shape=[4294967296, 4294967296])
    fd.add_output(T1)
# CHECK: extent-overflow.py:[[@LINE-2]]:39: error: the 'new_shape' [4294967296, 4294967296] of 'fd.ops.reshape' has more than 2^63-1 elements

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T1 = fd.ops.reshape(T0, new_shape=[4294967296, 4294967296])
    fd.add_output(T1)
# CHECK: extent-overflow.py:[[@LINE-2]]:39: error: the 'new_shape' [4294967296, 4294967296] of 'fd.ops.reshape' has more than 2^63-1 elements

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T1 = fd.ops.reshape(T0, new_shape=[3037000500 * 3037000500])
    fd.add_output(T1)
# CHECK: extent-overflow.py:[[@LINE-2]]:40: error: integer overflow in '3037000500 * 3037000500' (beyond 64 bits)

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T1 = fd.ops.reshape(T0, new_shape=[2 ** 63])
    fd.add_output(T1)
# CHECK: extent-overflow.py:[[@LINE-2]]:40: error: integer overflow in '2 ** 63' (beyond 64 bits)

# -----
def f(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(1e300, dtype=DataType.Int)
# CHECK: extent-overflow.py:[[@LINE-1]]:27: error: 'fd.define_scalar' cannot make an integer from 1e+300
