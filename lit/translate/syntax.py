# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py %s --function=legacy | FileCheck %s --check-prefix=ONLY
# The subset of Python that nvFuser, Thunder and the seeds print: comments,
# bracketed and backslash line continuation, keyword or positional
# arguments, nested calls, arithmetic on tensors, constants, shape vectors
# and tensor sizes, several definitions and an inline `with` body.
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
    T10 = fd.ops.broadcast_in_dim(T9, shape=[-1, 1], broadcast_dims=[0])
    T11 = fd.ops.add(T8, S3)
    T12 = fd.ops.rsqrt(T11)
    T13 = fd.ops.broadcast_in_dim(T12, [-1, 1], [0])
    T14 = (T7 - T10) * T13 * S2 + \
        S4
    S15 = fd.ops.size(T0, dim=1)
    S_rows = fd.ops.size(T0, 0)
    V16 = fd.define_vector([S_rows, S15], dtype=DataType.Int)
    T17 = fd.ops.reshape(T14, new_shape=V16)
    T18 = fd.ops.cast(fd.ops.neg(T17), dtype=DataType.BFloat16)
    fd.add_output(T18)
    fd.add_output(S2)

# CHECK-LABEL: fusion @current {
# CHECK-NEXT:    %T0 = input bf16[i0, i1] {stride_order=[1, 0], contiguity=[true, true], example=randn, example_shape=[2, 8]}
# CHECK-NEXT:    %T1 = input bf16[1, i1] {contiguity=[none, true], example=randn, seed=1, example_shape=[1, 8]}
# CHECK-NEXT:    %S2 = input f64 {example=0.5}
# CHECK-NEXT:    %T5 = cast %T0 : f32[i0, i1]
# CHECK-NEXT:    %T6 = cast %T1 : f32[1, i1]
# CHECK-NEXT:    %T7 = add %T5, %T6 : f32[i0, i1]
# CHECK-NEXT:    %T8, %T9 = var_mean %T7 {axes=[1], correction=0} : f32[i0], f32[i0]
# CHECK-NEXT:    %T10 = broadcast_in_dim %T9 {broadcast_dims=[0]} : f32[i0, 1]
# CHECK-NEXT:    %T11 = add %T8, 1e-05 : f32[i0]
# CHECK-NEXT:    %T12 = rsqrt %T11 : f32[i0]
# CHECK-NEXT:    %T13 = broadcast_in_dim %T12 {broadcast_dims=[0]} : f32[i0, 1]
# CHECK-NEXT:    %[[A:.*]] = sub %T7, %T10 : f32[i0, i1]
# CHECK-NEXT:    %[[B:.*]] = mul %[[A]], %T13 : f32[i0, i1]
# CHECK-NEXT:    %[[C:.*]] = mul %[[B]], %S2 : f32[i0, i1]
# CHECK-NEXT:    %T14 = add %[[C]], i32(2) : f32[i0, i1]
# CHECK-NEXT:    %T17 = reshape %T14 : f32[i0, i1]
# CHECK-NEXT:    %[[N:.*]] = neg %T17 : f32[i0, i1]
# CHECK-NEXT:    %T18 = cast %[[N]] : bf16[i0, i1]
# CHECK-NEXT:    output %T18, %S2
# CHECK-NEXT:  }

def legacy(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1, -1], contiguous=[True, True, True], dtype=DataType.Float)
    T1 = fd.ops.view(T0, original_shape=[768, 128, 64], new_shape=[64, 12, 128, 64])
    T2 = fd.ops.permute(T1, dims=[0, 2, 1, 3])
    S3 = fd.define_constant(0.5)
    T4 = fd.ops.mul(T2, S3)
    fd.add_output(T4)

# CHECK-LABEL: fusion @legacy {
# CHECK-NEXT:    %T0 = input f32[768, 128, 64] {contiguity=[true, true, true]}
# CHECK-NEXT:    %T1 = reshape %T0 : f32[64, 12, 128, 64]
# CHECK-NEXT:    %T2 = permute %T1 {dims=[0, 2, 1, 3]} : f32[64, 128, 12, 64]
# CHECK-NEXT:    %T4 = mul %T2, 0.5 : f32[64, 128, 12, 64]
# CHECK-NEXT:    output %T4
# ONLY-NOT:    fusion @current
# ONLY:        fusion @legacy {
# ONLY-NOT:    fusion

with FusionDefinition() as fd:
    current(fd)

inputs = [
    torch.randn(2, 8, dtype=torch.bfloat16, device="cuda:0"),
    torch.randn((1, 8), dtype=torch.bfloat16, device="cuda:0"),
    0.5,
]
for _ in range(5):
    out = fd.execute(inputs)

# An inline definition: the body of the `with` block is the fusion.
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[4096], contiguity=[True], dtype=DataType.Float)
    T1 = fd.ops.slice(T0, start_indices=[0], end_indices=[2048], strides=[1])
    T2 = fd.ops.slice(T0, start_indices=[-2048], end_indices=[4096])
    T3 = fd.ops.cat([T2, T1], dim=-1)
    T4 = fd.ops.pad(T3, [1, 1], None)
    fd.add_output(fd.ops.sum(T4, dims=[0], keepdim=True))
fd.execute([torch.randn(4096, device="cuda")])

# CHECK-LABEL: fusion @fusion {
# CHECK-NEXT:    %T0 = input f32[4096] {contiguity=[true]}
# CHECK-NEXT:    %T1 = slice %T0 {starts=[0], ends=[2048], steps=[1]} : f32[2048]
# CHECK-NEXT:    %T2 = slice %T0 {starts=[2048], ends=[4096], steps=[1]} : f32[2048]
# CHECK-NEXT:    %T3 = cat %T2, %T1 {dim=0} : f32[4096]
# CHECK-NEXT:    %T4 = pad %T3, 0.0 {widths=[1, 1]} : f32[4098]
# CHECK-NEXT:    %[[S:.*]] = sum %T4 {axes=[0], keepdim=true} : f32[1]
# CHECK-NEXT:    output %[[S]]
