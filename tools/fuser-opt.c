/* fuser-opt: run passes over .fir files (see --help).  A thin main over
 * lib/driver: --emit=llvm|ptx goes through the build's code-generation
 * target (fu_compiler), one per process so that libdevice is read once. */
#include <stdio.h>

#include "fuser/driver.h"

int main(int argc, char **argv) {
  fu_compiler compiler;
  fu_compiler_init(&compiler, NULL, NULL, fu_default_allocator());
  fu_opt_config cfg = {.tool_name = "fuser-opt", .compiler = &compiler};
  int rc = fu_opt_main(argc, argv, &cfg, stdin, stdout, stderr);
  fu_compiler_free(&compiler);
  return rc;
}
