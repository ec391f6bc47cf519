/* fuser: names of status codes. */
#include "fuser/status.h"

const char *fu_status_name(fu_status s) {
  switch (s) {
  case FU_OK: return "ok";
  case FU_ERR_PARSE: return "parse error";
  case FU_ERR_VERIFY: return "verification error";
  case FU_ERR_UNSUPPORTED: return "unsupported";
  case FU_ERR_IO: return "i/o error";
  case FU_ERR_NOMEM: return "out of memory";
  case FU_ERR_RUNTIME: return "runtime error";
  case FU_ERR_INVALID_ARG: return "invalid argument";
  }
  return "unknown status";
}
