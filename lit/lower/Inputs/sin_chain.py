# Writes a fusion that is one straight chain of N `sin` ops on f32[N0]:
#   python3 sin_chain.py N > chain.fir
# The lowering, the index graph and the other walks over a segment's ops
# must not recurse once per op (a long chain would exhaust the stack).
import sys

n = int(sys.argv[1])
print("fusion @chain {")
print("  %T0 = input f32[1024]")
for i in range(1, n + 1):
    print(f"  %T{i} = sin %T{i - 1} : f32[1024]")
print(f"  output %T{n}")
print("}")
