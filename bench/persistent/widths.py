#!/usr/bin/env python3
"""fuser: the issue-12 normalizations over models' row widths, as benchmark fusions.

    python3 bench/persistent/widths.py OUT_DIR [WIDTH...] [--dtype=bf16|f32]

Writes OUT_DIR/<op>_<width>.fir for softmax, layer norm (weight and bias) and
RMS norm (weight), each over rows of WIDTH elements, as many rows as make
about 2^26 elements (the size of the issue's table), input, weights and
output in the dtype and compute in f32: the same definitions as
bench/persistent/*.fir, at widths that are not a power of two (default: 640,
768, 1152, 1280, 1600, 1920, 3072, 4544, 5120, 12288).  Each file names its
peer row (`// peer: <op>_<width>`), which bench/torch_files.py and nvf_bench.py
`files` write for the .py definitions that `bench/torch_check.py prepare`
makes from these files.
"""
import os
import sys

DEFAULT_WIDTHS = (640, 768, 1152, 1280, 1600, 1920, 3072, 4544, 5120, 12288)
ELEMENTS = 1 << 26


def softmax(name, m, n, dt):
    return f"""fusion @{name} {{
  %T0 = input {dt}[{m}, {n}] {{example=randn}}
  %T1 = cast %T0 : f32[{m}, {n}]
  %T2 = max %T1 {{axes=[1]}} : f32[{m}]
  %T3 = broadcast %T2 {{is_broadcast_dim=[false, true]}} : f32[{m}, 1]
  %T4 = sub %T1, %T3
  %T5 = exp %T4
  %T6 = sum %T5 {{axes=[1]}} : f32[{m}]
  %T7 = broadcast %T6 {{is_broadcast_dim=[false, true]}} : f32[{m}, 1]
  %T8 = div %T5, %T7
  %T9 = cast %T8 : {dt}[{m}, {n}]
  output %T9
}}
"""


def layernorm(name, m, n, dt):
    return f"""fusion @{name} {{
  %T0 = input {dt}[{m}, {n}] {{example=randn}}
  %T1 = input {dt}[{n}] {{example=randn}}
  %T2 = input {dt}[{n}] {{example=randn}}
  %T3 = cast %T0 : f32[{m}, {n}]
  %T4 = cast %T1 : f32[{n}]
  %T5 = cast %T2 : f32[{n}]
  %T6, %T7 = var_mean %T3 {{axes=[1], correction=0}}
  %T8 = add %T6, 1e-05
  %T9 = rsqrt %T8
  %T10 = broadcast %T7 {{is_broadcast_dim=[false, true]}} : f32[{m}, 1]
  %T11 = sub %T3, %T10
  %T12 = broadcast %T9 {{is_broadcast_dim=[false, true]}} : f32[{m}, 1]
  %T13 = mul %T11, %T12
  %T14 = broadcast %T4 {{is_broadcast_dim=[true, false]}} : f32[1, {n}]
  %T15 = mul %T13, %T14
  %T16 = broadcast %T5 {{is_broadcast_dim=[true, false]}} : f32[1, {n}]
  %T17 = add %T15, %T16
  %T18 = cast %T17 : {dt}[{m}, {n}]
  output %T18
}}
"""


def rmsnorm(name, m, n, dt):
    return f"""fusion @{name} {{
  %T0 = input {dt}[{m}, {n}] {{example=randn}}
  %T1 = input {dt}[{n}] {{example=randn}}
  %T2 = cast %T0 : f32[{m}, {n}]
  %T3 = cast %T1 : f32[{n}]
  %T4 = mul %T2, %T2
  %T5 = sum %T4 {{axes=[1]}} : f32[{m}]
  %T6 = mul %T5, {1.0 / n!r}
  %T7 = add %T6, 1e-06
  %T8 = rsqrt %T7
  %T9 = broadcast %T8 {{is_broadcast_dim=[false, true]}} : f32[{m}, 1]
  %T10 = mul %T2, %T9
  %T11 = broadcast %T3 {{is_broadcast_dim=[true, false]}} : f32[1, {n}]
  %T12 = mul %T10, %T11
  %T13 = cast %T12 : {dt}[{m}, {n}]
  output %T13
}}
"""


OPS = (("softmax", softmax), ("layernorm", layernorm), ("rmsnorm", rmsnorm))


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    dt = "bf16"
    for a in argv[1:]:
        if a.startswith("--dtype="):
            dt = a.split("=", 1)[1]
        elif a.startswith("--"):
            print(f"widths.py: unknown option {a}", file=sys.stderr)
            return 2
    if not args or dt not in ("bf16", "f16", "f32"):
        print(__doc__, file=sys.stderr)
        return 2
    out = args[0]
    widths = [int(w) for w in args[1:]] or list(DEFAULT_WIDTHS)
    os.makedirs(out, exist_ok=True)
    for n in widths:
        if n < 1:
            print(f"widths.py: width {n} is not positive", file=sys.stderr)
            return 2
        m = max(1, round(ELEMENTS / n))
        for op, make in OPS:
            case = f"{op}_{n}" if dt == "bf16" else f"{op}_{dt}_{n}"
            with open(os.path.join(out, case + ".fir"), "w") as f:
                f.write(f"// {op} {dt}[{m}, {n}] (bench/persistent/widths.py)\n// peer: {case}\n")
                f.write(make(case, m, n, dt))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
