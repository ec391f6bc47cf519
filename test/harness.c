/* fuser: unit-test harness. */
#include "harness.h"

#include <stdarg.h>

int fu_test_failures;
int fu_test_checks;

void fu_test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fu_test_failures++;
  fprintf(stderr, "%s:%d: FAILED: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

int fu_test_main(const fu_test_case *cases, int n) {
  for (int i = 0; i < n; i++) {
    int before = fu_test_failures;
    cases[i].fn();
    printf("%s %s\n", fu_test_failures == before ? "PASS" : "FAIL", cases[i].name);
  }
  printf("%d checks, %d failures\n", fu_test_checks, fu_test_failures);
  return fu_test_failures ? 1 : 0;
}
