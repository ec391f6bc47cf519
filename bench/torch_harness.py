#!/usr/bin/env python3
"""Times fuser's precompiled kernels inside PyTorch's timing loop.

fuser-run --bench and the peers' scripts (peer_targets.py, nvf_bench.py)
both flush L2 and idle the GPU before each timed run, but with different
code: this script takes the kernels that kernel_bench.py precompiled (the
.lowered.fir names every kernel's parameters, grid, block and shared
memory; the .ptx holds the code), launches them through the CUDA driver
from Python, and times them with the peers' own loop (flush.fill_, then
torch.cuda._sleep, then CUDA events around the launches, median).  A row
whose ratio to its peer differs between this and fuser-run says the two
harnesses disagree, not the kernels.

  python3 bench/torch_harness.py DIR CASE [CASE...] [--iters N] [--json OUT]

Workspaces are allocated as the kernels declare them (zeroed where they
say so); the inputs are random (normal for floats, zero for integers and
bool), which does not change how long these kernels take.
"""
import argparse
import ctypes
import json
import re
import statistics
import sys

import torch

import torch_timing  # bench/torch_timing.py, beside this script

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
      "i32": torch.int32, "i64": torch.int64, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool}
KERNEL = re.compile(r"^\s*kernel @(\w+) \((.*)\)\s*$")
LAUNCH = re.compile(r"grid=\[(\d+), (\d+), (\d+)\] block=\[(\d+), (\d+), (\d+)\] smem=(\d+)")
PARAM = re.compile(r"%(\w+): (global|workspace) (\w+)\[([^\]]*)\]([^,]*)")


def size_of(expr):
    """A workspace size as the IR prints it: integers and mul(a, b)."""
    return int(eval(expr, {"__builtins__": {}}, {"mul": lambda a, b: a * b}))


def parse_kernels(lowered):
    """[(name, [(value, kind, dtype, shape, zeroed)], grid, block, smem)] in launch order."""
    out, lines = [], open(lowered).read().split("\n")
    for i, line in enumerate(lines):
        m = KERNEL.match(line)
        if not m:
            continue
        params = []
        for item in re.split(r", (?=%)", m.group(2)):
            p = PARAM.fullmatch(item)
            if not p:
                sys.exit(f"{lowered}: kernel @{m.group(1)} takes '{item}', which this script cannot pass")
            name, kind, dt, dims, rest = p.groups()
            if kind == "workspace":
                shape = [size_of(dims)]
            else:
                shape = [int(d) for d in dims.split(",")] if dims.strip() else []
            params.append((name, kind, dt, shape, "zeroed" in rest))
        lm = LAUNCH.search(lines[i + 1])
        if not lm:
            sys.exit(f"{lowered}: no launch line after kernel @{m.group(1)}")
        g = tuple(int(x) for x in lm.groups())
        out.append((m.group(1), params, g[0:3], g[3:6], g[6]))
    return out


class Driver:
    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")

    def check(self, r, what):
        if r != 0:
            sys.exit(f"{what} failed: CUresult {r}")

    def load(self, ptx, name, smem):
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)), "cuModuleLoadData")
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction " + name)
        if smem > 48 * 1024:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self.check(self.cu.cuFuncSetAttribute(fn, 8, ctypes.c_int(smem)), "cuFuncSetAttribute")
        return fn

    def launch(self, fn, grid, block, smem, ptrs, stream):
        vals = (ctypes.c_uint64 * len(ptrs))(*ptrs)
        args = (ctypes.c_void_p * len(ptrs))(*[ctypes.addressof(vals) + 8 * i for i in range(len(ptrs))])
        self.check(self.cu.cuLaunchKernel(fn, *grid, *block, smem, ctypes.c_void_p(stream), args, None),
                   "cuLaunchKernel")


def prepare(drv, d, case):
    kernels = parse_kernels(f"{d}/{case}.lowered.fir")
    ptx = open(f"{d}/{case}.ptx", "rb").read() + b"\0"
    tensors, launches, zeroed = {}, [], []
    for name, params, grid, block, smem in kernels:
        fn = drv.load(ptx, name, smem)
        ptrs = []
        for value, kind, dt, shape, zero in params:
            key = value if kind == "global" else f"{name}/{value}"
            if key not in tensors:
                t = torch.empty(shape, dtype=DT[dt], device="cuda")
                if t.is_floating_point():
                    t.normal_()
                else:
                    t.zero_()
                tensors[key] = t
                if zero:
                    zeroed.append(t)
            ptrs.append(tensors[key].data_ptr())
        launches.append((fn, grid, block, smem, ptrs))
    return launches, zeroed


def timed(run, iters, warm=5):
    """peer_targets.py's loop (bench/torch_timing.py): flush L2 with fill_, idle the GPU, events around the run."""
    return statistics.median(torch_timing.event_times_us(run, iters, warm, torch_timing.flush_buffer()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.cuda.init()
    torch.empty(1, device="cuda")  # the runtime makes the primary context current for the driver calls
    drv, rows = Driver(), []
    for case in a.cases:
        launches, zeroed = prepare(drv, a.dir, case)
        stream = torch.cuda.current_stream().cuda_stream

        def run():
            for fn, grid, block, smem, ptrs in launches:
                drv.launch(fn, grid, block, smem, ptrs, stream)

        for t in zeroed:  # the kernels leave their semaphores zeroed again
            t.zero_()
        us = timed(run, a.iters)
        rows.append(dict(case=case, fuser_torch_harness_us=us, kernels=len(launches)))
        print(f"| {case} | {us:.1f} us | {len(launches)} kernel(s) |", flush=True)
    if a.json:
        json.dump(dict(device=torch.cuda.get_device_name(), rows=rows), open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
