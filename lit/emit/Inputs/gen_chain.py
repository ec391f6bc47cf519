"""Writes a fusion that is a chain of N unary ops: %T1 = OP %T0, ... %TN.

usage: gen_chain.py N OP OUT
"""
import sys

n, op, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lines = ["fusion @chain {", "  %T0 = input f32[1024, 1024]"]
lines += ["  %%T%d = %s %%T%d" % (i + 1, op, i) for i in range(n)]
lines += ["  output %%T%d" % n, "}", ""]
with open(out, "w") as f:
    f.write("\n".join(lines))
