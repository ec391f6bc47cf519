/* fuser-run: run a fusion and summarise its outputs (see --help).
 *
 *   fuser-run FILE.fir [--device=gpu|cpu|kir] [--check] [--bench] [--ptx FILE.ptx] ...
 *
 * --device=cpu runs the reference interpreter, --device=kir the compiled
 * kernels on the kernel-IR interpreter, and the default, --device=gpu, the
 * kernels on the GPU through the CUDA driver API.  A thin main over
 * lib/driver (fu_run_main, lib/driver/run_*.c). */
#include <stdio.h>

#include "fuser/driver.h"

int main(int argc, char **argv) { return fu_run_main(argc, argv, stdin, stdout, stderr); }
