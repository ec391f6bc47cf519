#!/usr/bin/env python3
"""fuser: benchmark a set of fusions on the GPU, beside the peers' numbers.

Two steps, because the GPU host has no LLVM:

  kernel_bench.py precompile BUILD OUT CASE...
      On a machine with LLVM (no GPU needed): each CASE (.fir, or an nvFuser
      .py that fuser-translate imports) goes through `fuser-opt --pass=all`;
      OUT/<case>.lowered.fir and OUT/<case>.ptx are written, and
      OUT/cases.json lists the cases (with the peer row each names) and the
      ones that did not compile, with the reason.

  kernel_bench.py run BUILD OUT [--iters N] [--warmup N] [--peers FILE.json]...
                     [--no-check] [--json FILE]
      On the GPU host: `fuser-run --bench --check --json` on every
      precompiled case (L2 flushed, CUDA events, median, GB/s and % of the
      copy bandwidth measured in the same process), then one Markdown table.
      --peers adds the columns of peer results measured in the same session:
      the JSON written by ../shared/bench/peer_targets.py (eager and
      torch.compile) or by nvf_bench.py (nvFuser), matched by the case's
      `// peer: NAME` line.  --no-check times without the reference
      interpreter's check, which on full-size inputs costs far more host time
      than the timing itself (check those kernels on smaller shapes).
      --json writes the rows (fuser's time, bytes and GB/s, the copy
      bandwidth, each peer's time) for bench/plot_norms.py.

A case names its peer row with a line `// peer: NAME` (in a .py: `# peer:
NAME`); the row's name is the `case` field of the peers' JSON.
"""
import json
import os
import re
import subprocess
import sys


def case_name(path):
    return os.path.splitext(os.path.basename(path))[0]


def peer_of(path):
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*(?://|#)\s*peer:\s*(.+?)\s*$", line)
            if m:
                return m.group(1)
    return None


def precompile(build, out, cases, device):
    os.makedirs(out, exist_ok=True)
    listed, failed = [], []
    for path in cases:
        name = case_name(path)
        fir = path
        if path.endswith(".py"):
            fir = os.path.join(out, name + ".fir")
            r = subprocess.run([os.path.join(build, "fuser-translate"), "--from=nvfuser-py", path, "-o", fir],
                               capture_output=True, text=True)
            if r.returncode != 0:
                failed.append(dict(case=name, why=r.stderr.strip()))
                continue
        lowered = os.path.join(out, name + ".lowered.fir")
        ptx = os.path.join(out, name + ".ptx")
        opt = os.path.join(build, "fuser-opt")
        r1 = subprocess.run([opt, f"--device={device}", "--pass=all", fir, "-o", lowered], capture_output=True, text=True)
        r2 = subprocess.run([opt, f"--device={device}", "--pass=all", "--emit=ptx", fir, "-o", ptx],
                            capture_output=True, text=True)
        # A segment without a kernel makes --emit fail (no --allow-partial here: a benchmark needs them all).
        if r1.returncode or r2.returncode:
            failed.append(dict(case=name, why=(r1.stderr + r2.stderr).strip().splitlines()[0:2]))
            continue
        listed.append(dict(case=name, peer=peer_of(path)))
        print(f"precompiled {name}")
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(dict(cases=listed, failed=failed), f, indent=1)
    for x in failed:
        print(f"not compiled: {x['case']}: {x['why']}")
    return 0


def load_peers(paths):
    """{peer row name: {column: microseconds}} from peer_targets.py / nvf_bench.py outputs."""
    table = {}
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        for row in d.get("rows", []):
            cols = table.setdefault(row["case"], {})
            for key, col in (("eager_us", "eager"), ("compile_us", "torch.compile"), ("nvf_us", "nvFuser")):
                if isinstance(row.get(key), (int, float)):
                    cols[col] = row[key]
    return table


def run(build, out, iters, warmup, peer_files, check=True, json_out=None):
    with open(os.path.join(out, "cases.json")) as f:
        listing = json.load(f)
    peers = load_peers(peer_files)
    peer_cols = sorted({c for v in peers.values() for c in v}, key=["eager", "torch.compile", "nvFuser"].index)
    results, status, header = [], 0, None
    for c in listing["cases"]:
        name = c["case"]
        cmd = [os.path.join(build, "fuser-run"), os.path.join(out, name + ".lowered.fir"), "--ptx",
               os.path.join(out, name + ".ptx"), "--bench", "--iters", str(iters), "--warmup", str(warmup),
               "--json", "--print-values", "0"] + (["--check"] if check else [])
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        try:
            d = json.loads(r.stdout)
        except json.JSONDecodeError:
            print(f"kernel_bench: fuser-run failed on {name}:\n{r.stderr}", file=sys.stderr)
            status = 1
            continue
        fz = d["fusions"][0]
        b = fz["bench"]
        if header is None:
            header = (f"- GPU: {fz['gpu']}; copy {b['copy_gbs']:.0f} GB/s; median of {b['iters']} runs after "
                      f"{b['warmup']} warm-up; L2 flushed, then {b.get('settle_us', 0)} us of GPU spin, before each run")
        ok = bool(fz.get("check_pass")) if check else None
        status |= 0 if ok is not False else 1
        results.append((name, c.get("peer"), fz, b, ok))
    print(header or "- no case ran")
    print()
    cols = ["case", "kernels", "grid x block", "fuser us", "GB/s", "% copy", "check"] + [f"{p} us" for p in peer_cols]
    if peer_cols:
        cols.append("fuser / best peer")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for name, peer, fz, b, ok in results:
        t = b["total"]
        launches = "; ".join("x".join(str(g) for g in l["grid"]) + " / " + "x".join(str(t) for t in l["block"])
                             for l in fz["launches"])
        row = [name, str(len(b["kernels"])), launches, f"{t['median_us']:.1f}", f"{t['gbs']:.0f}",
               f"{t['pct_copy']:.1f}%", {True: "PASS", False: "FAIL", None: "not checked"}[ok]]
        prow = peers.get(peer, {}) if peer else {}
        for p in peer_cols:
            row.append(f"{prow[p]:.1f}" if p in prow else "-")
        if peer_cols:
            best = min((prow[p] for p in peer_cols if p in prow and p != "eager"), default=None)
            row.append(f"{t['median_us'] / best:.2f}" if best else "-")
        print("| " + " | ".join(row) + " |")
    for x in listing["failed"]:
        print(f"| {x['case']} | not compiled: {' '.join(x['why']) if isinstance(x['why'], list) else x['why']} |")
    if json_out:
        rows = [dict(case=name, peer=peer, us=b["total"]["median_us"], gbs=b["total"]["gbs"],
                     bytes=b["total"]["gbs"] * b["total"]["median_us"] * 1e3, copy_gbs=b["copy_gbs"], gpu=fz["gpu"],
                     check=ok, peers=peers.get(peer, {}) if peer else {})
                for name, peer, fz, b, ok in results]
        with open(json_out, "w") as f:
            json.dump(dict(rows=rows), f, indent=1)
    return status


def main(argv):
    if len(argv) >= 4 and argv[1] == "precompile":
        return precompile(argv[2], argv[3], argv[4:], os.environ.get("FUSER_GPU_DEVICE", "h100"))
    if len(argv) >= 4 and argv[1] == "run":
        iters, warmup, peers, check, json_out, rest = 100, 10, [], True, None, argv[4:]
        while rest:
            opt = rest.pop(0)
            if opt == "--iters" and rest:
                iters = int(rest.pop(0))
            elif opt == "--warmup" and rest:
                warmup = int(rest.pop(0))
            elif opt == "--peers" and rest:
                peers.append(rest.pop(0))
            elif opt == "--no-check":
                check = False
            elif opt == "--json" and rest:
                json_out = rest.pop(0)
            else:
                print(f"kernel_bench: unknown argument {opt}", file=sys.stderr)
                return 2
        return run(argv[2], argv[3], iters, warmup, peers, check, json_out)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
