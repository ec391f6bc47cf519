# Writes a fusion that is one straight chain of N ops on f32[1024]:
#   python3 sin_chain.py N          N `sin` ops
#   python3 sin_chain.py N views    `neg` ops with a reshape between each two
#                                   (f32[1024] <-> f32[32, 32]), N ops in all
#   python3 sin_chain.py N sum      N `sin` ops on f32[3, 5], then a sum over
#                                   the last dim (a reduction's prologue)
# The lowering, the index graph and the other walks over a segment's ops
# must not recurse once per op (a long chain would exhaust the stack).
import sys

n = int(sys.argv[1])
views = len(sys.argv) > 2 and sys.argv[2] == "views"
red = len(sys.argv) > 2 and sys.argv[2] == "sum"
print("fusion @chain {")
print("  %T0 = input f32[3, 5]" if red else "  %T0 = input f32[1024]")
for i in range(1, n + 1):
    if red:
        print(f"  %T{i} = sin %T{i - 1} : f32[3, 5]")
        continue
    if not views:
        print(f"  %T{i} = sin %T{i - 1} : f32[1024]")
        continue
    shape = "f32[32, 32]" if (i // 2) % 2 else "f32[1024]"
    op = f"reshape %T{i - 1}" if i % 2 == 0 else f"neg %T{i - 1}"
    print(f"  %T{i} = {op} : {shape}")
if red:
    print(f"  %R = sum %T{n} {{axes=[1]}} : f32[3]")
    print("  output %R")
else:
    print(f"  output %T{n}")
print("}")
