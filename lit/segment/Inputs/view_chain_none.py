# seed001 view chain with views none present (see test/fusions/seed001_view_chain.py).
def simple_fusion(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Float)
    T1 = fd.ops.add(T0, T0)
    T2 = fd.ops.mul(T1, T1)
    fd.add_output(T2)

inputs = [
    torch.randn(8192, 3072, device="cuda"),
]
