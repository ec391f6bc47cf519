"""Writes .fir files that make many errors, for the error-limit tests.

usage: gen_errors.py KIND OUT
  long-line: one op whose 5,000 operands are all undefined, on one ~50 kB line
  many-lines: 100 ops on 100 lines, each using an undefined value
  caret: one undefined operand at column ~3000 of a long line
  split: the many-lines fusion twice, as two `// -----` chunks
"""
import sys

kind, out = sys.argv[1], sys.argv[2]
lines = ["fusion @f {", "  %T0 = input f32[4]"]
if kind == "long-line":
    lines.append("  %T1 = add " + ", ".join("%%undefined%d" % i for i in range(5000)) + " : f32[4]")
elif kind in ("many-lines", "split"):
    for i in range(100):
        lines.append("  %%T%d = neg %%missing%d : f32[4]" % (i + 1, i))
elif kind == "caret":
    operands = ["%T0"] * 600 + ["%target"] + ["%T0"] * 600
    lines.append("  %T1 = add " + ", ".join(operands) + " : f32[4]")
else:
    sys.exit("unknown kind " + kind)
lines += ["  output %T0", "}"]
if kind == "split":
    lines += ["// -----"] + lines
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
