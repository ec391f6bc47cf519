#!/usr/bin/env python3
"""fuser: PyTorch eager and torch.compile on nvFuser definition files, as peers.

  python3 bench/torch_files.py PEERS OUT.json CASE.py...

Each CASE.py is an nvFuser definition with an `inputs = [...]` list (the form
bench/kernel_bench.py precompiles for fuser and nvf_bench.py `files` runs on
nvFuser).  PEERS/nvf_torch.py turns the definition into a PyTorch function;
this script times it eagerly and through torch.compile the way fuser-run
--bench and the other peer scripts time (L2 flushed by a 256 MiB write before
each run, the GPU kept busy while Python dispatches, CUDA events, median) and
writes rows named by the file (the `case` kernel_bench.py matches against a
case's `# peer:` line).
"""
import json
import os
import statistics
import sys
import time


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.abspath(argv[1]))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import nvf_torch
    import torch_timing
    flush = torch_timing.flush_buffer()
    iters = int(os.environ.get("ITERS", 100))

    def timed(fn, args, warm=5):
        return statistics.median(torch_timing.event_times_us(lambda: fn(*args), iters, warm, flush))

    rows = []
    for path in argv[3:]:
        row = dict(case=os.path.basename(path)[:-3])
        rows.append(row)
        try:
            fn, inputs, _, _ = nvf_torch.load(path)
            row["eager_us"] = timed(fn, inputs)
            torch._dynamo.reset()
            compiled = torch.compile(fn, dynamic=False)
            t0 = time.perf_counter()
            compiled(*inputs)
            torch.cuda.synchronize()
            row["compile_cold_s"] = time.perf_counter() - t0
            row["compile_us"] = timed(compiled, inputs)
        except Exception as e:  # a case that fails is reported, the others still run
            row["error"] = repr(e)[:300]
        print(json.dumps(row), flush=True)
    with open(argv[2], "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(), rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
