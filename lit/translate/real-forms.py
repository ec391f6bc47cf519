# RUN: fuser-translate --from=nvfuser-py --split-input-file %s 2>%t.err | FileCheck %s
# RUN: FileCheck %s --check-prefix=WARN --allow-empty < %t.err
# RUN: sed -n '1,/^# -----/p' %s > %t.py
# RUN: fuser-translate --from=nvfuser-py %t.py -o %t.fir
# RUN: fuser-run --device=kir --check %t.fir | FileCheck %s --check-prefix=KIR
# KIR: check %T2: PASS f32[6, 8]
# Forms real repros use: expanded inputs (contiguity None on a dim that is
# not 1), .expand(...) and size arithmetic in the inputs list,
# fd.from_pytorch(inputs[i]), fd.add_output(out, alias), a 0-dim tensor
# beside a higher-rank one, and cat along a dim the inputs list sizes.

# CHECK-LABEL: fusion @expanded
# CHECK-NEXT: %T0 = input f32[1, 8] {contiguity=[none, true], example=randn, example_shape=[1, 8], example_strides=[0, 1]}
# CHECK-NEXT: %T0_1 = expand %T0 : f32[6, 8]
# CHECK-NEXT: %T1 = input f32[6, 1] {contiguity=[true, none], example=randn, seed=1, example_shape=[6, 1], example_strides=[1, 0]}
# CHECK-NEXT: %T1_1 = expand %T1 : f32[6, 8]
# CHECK-NEXT: %T2 = add %T0_1, %T1_1 : f32[6, 8]
def expanded(fd):
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, None], dtype=DataType.Float)
    T2 = fd.ops.add(T0, T1)
    fd.add_output(T2)

inputs = [torch.randn(8, device="cuda").expand(6, 8), torch.randn(2 * 3, 1, device="cuda").expand(-1, 8)]

# -----
# Without an inputs list the expanded extent is a fresh symbol.
# CHECK-LABEL: fusion @expanded_symbolic
# CHECK-NEXT: %T0 = input f32[1, i0] {contiguity=[none, true]}
# CHECK-NEXT: %T0_1 = expand %T0 : f32[i1, i0]
def expanded_symbolic(fd):
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Float)
    T1 = fd.ops.neg(T0)
    fd.add_output(T1)

# -----
# CHECK-LABEL: fusion @from_pytorch
# CHECK-NEXT: %T0 = input bf16[i0, i1] {contiguity=[true, true], example=randn, example_shape=[4, 6]}
# CHECK-NEXT: %T1 = input f32[i1, i0] {contiguity=[false, false], example=randn, seed=1, example_shape=[6, 4], example_strides=[1, 6]}
# CHECK-NEXT: %T2 = input f32[1, i1] {contiguity=[none, true], example=randn, seed=2, example_shape=[1, 6]}
def from_pytorch(fd):
    T0 = fd.from_pytorch(inputs[0])
    T1 = fd.from_pytorch(inputs[1])
    T2 = fd.from_pytorch(inputs[2])
    T3 = fd.ops.permute(T1, dims=[1, 0])
    T4 = fd.ops.add(fd.ops.cast(T0, DataType.Float), T3)
    T5 = fd.ops.add(T4, T2)
    fd.add_output(T5)

inputs = [torch.randn(4, 6, dtype=torch.bfloat16, device="cuda"), torch.randn(4, 6, device="cuda").t(), torch.randn(1, 6, device="cuda")]

# -----
# The output is written into the input (lit/translate/alias.py has more).
# CHECK-LABEL: fusion @alias
# CHECK: output %T1 {alias=%T0}
# WARN-NOT: aliases the output
def alias(fd):
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    S1 = fd.define_scalar(0.5, dtype=DataType.Double)
    T1 = fd.ops.mul(T0, S1)
    fd.add_output(T1, T0)

# -----
# CHECK-LABEL: fusion @rank0
# CHECK-NEXT: %T0 = input f32[]
# CHECK-NEXT: %T1 = input f32[i0, i1]
# CHECK-NEXT: %_T0 = broadcast_in_dim %T0 {broadcast_dims=[]} : f32[i0, i1]
# CHECK-NEXT: %T2 = mul %_T0, %T1 : f32[i0, i1]
def rank0(fd):
    T0 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.mul(T0, T1)
    fd.add_output(T2)

# -----
# CHECK-LABEL: fusion @cat_sized
# CHECK: %T2 = cat %T0, %T1 {dim=1} : f32[3, 9]
def cat_sized(fd):
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.cat([T0, T1], dim=1)
    fd.add_output(T2)

inputs = [torch.randn(3, 4, device="cuda"), torch.randn(3, 5, device="cuda")]
