# seed001 view chain with views B present (see test/fusions/seed001_view_chain.py).
def simple_fusion(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Float)
    T1 = fd.ops.add(T0, T0)
    T2 = fd.ops.view(T1, original_shape=[8192, 3072], new_shape=[64, 128, 3072])   # B
    T3 = fd.ops.mul(T2, T2)
    fd.add_output(T3)

inputs = [
    torch.randn(8192, 3072, device="cuda"),
]
