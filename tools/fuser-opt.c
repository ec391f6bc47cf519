/* fuser-opt: run passes over .fir files (see --help).  A thin main over
 * lib/driver; the backends plug in here as --emit emitters when the build
 * has them (fuser_core itself needs neither LLVM nor CUDA). */
#include <stdio.h>

#include "fuser/driver.h"

int main(int argc, char **argv) {
  fu_opt_config cfg = {.tool_name = "fuser-opt"};
  return fu_opt_main(argc, argv, &cfg, stdin, stdout, stderr);
}
