/* fuser: status codes returned at the library's API edge. */
#ifndef FUSER_STATUS_H
#define FUSER_STATUS_H

typedef enum fu_status {
  FU_OK = 0,
  FU_ERR_PARSE,       /* malformed text */
  FU_ERR_VERIFY,      /* IR that breaks an invariant */
  FU_ERR_UNSUPPORTED, /* valid input the library cannot handle (yet) */
  FU_ERR_IO,          /* file could not be read or written */
  FU_ERR_NOMEM,       /* the allocator failed */
  FU_ERR_RUNTIME,     /* a failure while executing (interpreter, driver) */
  FU_ERR_INVALID_ARG, /* an API was called with bad arguments */
} fu_status;

const char *fu_status_name(fu_status s);

#endif
