# embedding_fwd with max_norm renormalizes the weight in place: refused.

def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
    W = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.embedding_fwd(T0, W, None, 1.0, 2.0, False, False)
    fd.add_output(T1)
