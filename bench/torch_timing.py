"""fuser: the timing loop that the PyTorch peer scripts share, the way
fuser-run --bench times its kernels.

Each timed run: the L2 flush buffer overwritten (a write larger than L2, so
the run starts from DRAM, with L2 left dirty as a training step's earlier
kernels leave it), the GPU kept busy for about 1 ms while Python dispatches
the call (so that the events time the kernels, not the host's launch overhead,
which torch.compile's guards would add to every run), and CUDA events around
the call.  The helpers return the times, in microseconds; callers take the
median.  Used by bench/torch_compare.py, torch_files.py, torch_harness.py,
matmul/torch_matmul.py and persistent/norm_outer_peers.py.
"""
import torch

# About 1 ms of GPU spinning at 2 GHz: longer than any Python dispatch here.
SPIN_CYCLES = 2_000_000


def flush_buffer(nbytes=256 << 20):
    """A CUDA buffer whose overwrite flushes L2 (256 MiB: five times an H100's L2)."""
    return torch.empty(nbytes, dtype=torch.uint8, device="cuda")


def event_times_us(run, iters, warmup, flush=None, spin_cycles=SPIN_CYCLES):
    """run() called `warmup` times untimed, then `iters` times, each after
    `flush` is overwritten (None: no flush) and the GPU spun for
    `spin_cycles` (0: no spin); the list of the timed runs in us."""
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    times = []
    for i in range(iters):
        if flush is not None:
            flush.fill_(i & 0xFF)
        if spin_cycles:
            torch.cuda._sleep(spin_cycles)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return times
