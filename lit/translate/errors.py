# RUN: not fuser-translate --from=nvfuser-py --split-input-file %s 2>&1 | FileCheck %s
# Bad input: every case is a located error, never a crash.

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    while True:
        pass
# CHECK: errors.py:[[@LINE-2]]:5: error: unsupported Python construct 'while'
# CHECK-NEXT: {{^}}    while True:
# CHECK-NEXT: {{^}}    ^

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.foo(T0)
# CHECK: errors.py:[[@LINE-1]]:10: error: unsupported op 'fd.ops.foo'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.sum(T0, axes=[0], keep_dims=False)
# CHECK: errors.py:[[@LINE-1]]:35: error: unsupported argument 'keep_dims' of 'fd.ops.sum'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, layout=None)
# CHECK: errors.py:[[@LINE-1]]:90: error: unsupported argument 'layout' of 'fd.define_tensor'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.ComplexFloat)
# CHECK: errors.py:[[@LINE-1]]:74: error: unsupported dtype 'DataType.ComplexFloat'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    if T0:
        fd.add_output(T0)
# CHECK: errors.py:[[@LINE-2]]:5: error: unsupported Python construct 'if'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.add(T0, T2)
# CHECK: errors.py:[[@LINE-1]]:25: error: undefined name 'T2'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = T0[0]
# CHECK: errors.py:[[@LINE-1]]:12: error: unsupported Python construct 'subscript'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.permute(T0)
# CHECK: errors.py:[[@LINE-1]]:10: error: unsupported FusionDefinition method 'fd.permute'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(T0)
inputs = [
    torch.randn(2, 3, device="cuda"),
    1.0,
]
# CHECK: errors.py:[[@LINE-4]]:10: error: the inputs list has 2 entries but 'f' defines 1 input

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(T0)
inputs = [torch.randn(2, 3, 4, device="cuda")]
# CHECK: errors.py:[[@LINE-1]]:11: error: input 0 ('%T0' : f32[i0, i1]) has rank 2, but the inputs list gives rank 3

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(T0)
inputs = [torch.randn(2, 3, dtype=torch.bfloat16, device="cuda")]
# CHECK: errors.py:[[@LINE-1]]:11: error: input 0 ('%T0' : f32[i0, i1]) gets bfloat16 data from the inputs list

# -----
def f(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(None, dtype=DataType.Double)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    fd.add_output(T1)
inputs = [torch.randn(3, device="cuda"), 2.0]
# CHECK: errors.py:[[@LINE-1]]:11: error: input 0 ('%S0' : f64) is a scalar, but the inputs list gives a tensor

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.reshape(T0, new_shape=[64, 128, 3072])
# CHECK: errors.py:[[@LINE-1]]:39: error: cannot tell the extents of 'fd.ops.reshape' from operand shape [T0.0, T0.1]: give original_shape, constant input sizes or an inputs list

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 3], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[3, 3], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.add(T0, T1)
# CHECK: errors.py:[[@LINE-1]]:10: error: 'add': operand 1 '%T1' of type f32[3, 3] does not broadcast with operand 0 '%T0' of type f32[2, 3]

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.add(T0, T0
# CHECK: errors.py:[[@LINE-1]]:20: error: '(' was never closed

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
   T1 = fd.ops.abs(T0)
# CHECK: errors.py:[[@LINE-1]]:4: error: unindent does not match any outer indentation level

# -----
def f(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(1j, dtype=DataType.ComplexDouble)
# CHECK: errors.py:[[@LINE-1]]:27: error: unsupported Python construct 'complex literal'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T1 = fd.ops.add(T0, lambda x: x)
# CHECK: errors.py:[[@LINE-1]]:25: error: unsupported Python construct 'lambda'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    fd.add_output(T0)
with FusionDefinition() as fd:
    g(fd)
# CHECK: errors.py:[[@LINE-1]]:5: error: call to undefined function 'g'

# -----
x = compute_something()
# CHECK: errors.py:[[@LINE-1]]:1: error: unsupported top-level assignment to 'x'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    fd.add_output(T0)
inputs = [torch.randn(4, device="cuda").unfold(0, 2, 1)]
# CHECK: errors.py:[[@LINE-1]]:11: error: unsupported input expression 'unfold'

# -----
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T1 = fd.ops.sum(T0, dims=[1])
# CHECK: errors.py:[[@LINE-1]]:30: error: 'dims' of 'fd.ops.sum' has a dim out of range for rank 1

# -----
# nvFuser ops fuser has no op for yet are located errors naming them.
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
    T2 = fd.ops.argsort(T0, 1)
# CHECK: errors.py:[[@LINE-1]]:10: error: unsupported op 'fd.ops.argsort'
