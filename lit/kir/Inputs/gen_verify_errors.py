"""Writes kernel IR with many verifier errors, for the error-limit test.

usage: gen_verify_errors.py OUT
  two `// -----` chunks, each one kernel of 30 `exp` ops on an i32 (each an
  error: the result of `exp` must be a float)
"""
import sys

lines = ["kernel @k () grid=[1, 1, 1] block=[1, 1, 1] smem=0 index=i32 {", "  %c = const 1 : i32"]
lines += ["  %%y%d = exp %%c : i32" % i for i in range(30)]
lines.append("}")
chunk = "\n".join(lines) + "\n"
with open(sys.argv[1], "w") as f:
    f.write(chunk + "// -----\n" + chunk)
