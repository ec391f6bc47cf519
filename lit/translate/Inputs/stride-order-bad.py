# stride_order with an order that is not a permutation of the dims.
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.stride_order(T0, [1, 1])
    fd.add_output(T1)
