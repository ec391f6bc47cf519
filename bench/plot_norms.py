#!/usr/bin/env python3
"""fuser: the normalization benchmark's plot (issue 12): effective bandwidth
against the row length N, one panel per op, for fuser and each peer measured
in the same session, with the copy bandwidth as the roof.

    plot_norms.py RESULTS.json OUT.svg

RESULTS.json is what `kernel_bench.py run ... --json RESULTS.json` writes
on the GPU host for bench/persistent/{softmax,layernorm,rmsnorm}_bf16_MxN.fir
(with --peers for eager, torch.compile and nvFuser).  A peer's bandwidth is
the bytes fuser's kernels must move over the peer's time, so every line
counts the same bytes.  The SVG is written by hand: no plotting library is
needed on either machine.
"""
import json
import math
import re
import sys

OPS = ("softmax", "layernorm", "rmsnorm")
TITLES = {"softmax": "softmax", "layernorm": "layer norm (weight, bias)", "rmsnorm": "RMS norm (weight)"}
SERIES = (("fuser", "#d62728"), ("torch.compile", "#1f77b4"), ("nvFuser", "#2ca02c"), ("eager", "#7f7f7f"))
W, H, PAD_L, PAD_B, PAD_T, PAD_R = 330, 260, 52, 40, 30, 24


def points(rows):
    """{op: {series: [(N, GB/s)]}} and the copy bandwidth."""
    table, copy = {op: {} for op in OPS}, 0.0
    for r in rows:
        m = re.match(r"(softmax|layernorm|rmsnorm)_bf16_(\d+)x(\d+)$", r["case"])
        if not m:
            continue
        op, n = m.group(1), int(m.group(3))
        copy = max(copy, r["copy_gbs"])
        table[op].setdefault("fuser", []).append((n, r["gbs"]))
        for name, us in r["peers"].items():
            table[op].setdefault(name, []).append((n, r["bytes"] / us / 1e3))
    return table, copy


def panel(x0, op, series, copy, ymax, ns):
    out = [f'<g transform="translate({x0},0)">',
           f'<text x="{PAD_L + (W - PAD_L - PAD_R) / 2}" y="18" text-anchor="middle" font-size="13">{TITLES[op]}</text>']
    lo, hi = math.log2(min(ns)), math.log2(max(ns))
    def px(n): return PAD_L + (math.log2(n) - lo) / max(hi - lo, 1) * (W - PAD_L - PAD_R)
    def py(g): return H - PAD_B - g / ymax * (H - PAD_B - PAD_T)
    out.append(f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" stroke="black"/>')
    out.append(f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" stroke="black"/>')
    step = 1000 if ymax > 2500 else 500
    for g in range(0, int(ymax) + 1, step):
        out.append(f'<text x="{PAD_L - 4}" y="{py(g) + 4}" text-anchor="end" font-size="10">{g}</text>')
        out.append(f'<line x1="{PAD_L}" y1="{py(g)}" x2="{W - PAD_R}" y2="{py(g)}" stroke="#eee"/>')
    for n in ns:
        out.append(f'<text x="{px(n)}" y="{H - PAD_B + 14}" text-anchor="middle" font-size="10">{n}</text>')
    out.append(f'<text x="{PAD_L + (W - PAD_L - PAD_R) / 2}" y="{H - 6}" text-anchor="middle" font-size="11">N (row length)</text>')
    if copy:
        out.append(f'<line x1="{PAD_L}" y1="{py(copy)}" x2="{W - PAD_R}" y2="{py(copy)}" stroke="black" stroke-dasharray="4 3"/>')
    for name, color in SERIES:
        pts = sorted(series.get(name, []))
        if not pts:
            continue
        path = " ".join(f"{px(n):.1f},{py(g):.1f}" for n, g in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        out += [f'<circle cx="{px(n):.1f}" cy="{py(g):.1f}" r="3" fill="{color}"/>' for n, g in pts]
    out.append("</g>")
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        d = json.load(f)
    table, copy = points(d["rows"])
    ns = sorted({n for op in OPS for s in table[op].values() for n, _ in s})
    if not ns:
        print(f"plot_norms: no softmax/layernorm/rmsnorm bf16 case in {argv[1]}", file=sys.stderr)
        return 1
    ymax = max([copy] + [g for op in OPS for s in table[op].values() for _, g in s]) * 1.08
    gpu = d["rows"][0].get("gpu", "")
    total_w = W * len(OPS)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{H + 40}" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="white"/>']
    for i, op in enumerate(OPS):
        svg += panel(i * W, op, table[op], copy, ymax, ns)
    svg.append(f'<text x="8" y="{PAD_T + 6}" font-size="10" transform="rotate(-90 8 {PAD_T + 6})" text-anchor="end">GB/s</text>')
    x = 20
    for name, color in SERIES:
        svg.append(f'<rect x="{x}" y="{H + 16}" width="14" height="4" fill="{color}"/>')
        svg.append(f'<text x="{x + 18}" y="{H + 22}" font-size="11">{name}</text>')
        x += 120
    svg.append(f'<line x1="{x}" y1="{H + 18}" x2="{x + 14}" y2="{H + 18}" stroke="black" stroke-dasharray="4 3"/>')
    svg.append(f'<text x="{x + 18}" y="{H + 22}" font-size="11">copy ({copy:.0f} GB/s)</text>')
    svg.append(f'<text x="{total_w - 8}" y="{H + 36}" font-size="10" text-anchor="end">bf16 in and out, f32 compute, M x N = 2^26; {gpu}</text>')
    svg.append("</svg>")
    with open(argv[2], "w") as f:
        f.write("\n".join(svg) + "\n")
    print(f"plot_norms: wrote {argv[2]} ({sum(len(s) for op in OPS for s in table[op].values())} points)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
