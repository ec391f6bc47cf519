# seed001 view chain with views A, B, C present (see test/fusions/seed001_view_chain.py).
def simple_fusion(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Float)
    T1 = fd.ops.view(T0, original_shape=[8192, 3072], new_shape=[64, 128, 3072])   # A
    T2 = fd.ops.add(T1, T1)
    T3 = fd.ops.view(T2, original_shape=[64, 128, 3072], new_shape=[8192, 3072])   # B
    T4 = fd.ops.mul(T3, T3)
    T5 = fd.ops.view(T4, original_shape=[8192, 3072], new_shape=[64, 128, 3072])   # C
    fd.add_output(T5)

inputs = [
    torch.randn(8192, 3072, device="cuda"),
]
