/* fuser: a minimal unit-test harness.  Each CHECK records a failure with
 * its file and line and the test carries on; main returns non-zero if any
 * check failed. */
#ifndef FUSER_TEST_HARNESS_H
#define FUSER_TEST_HARNESS_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

extern int fu_test_failures;
extern int fu_test_checks;

void fu_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define CHECK(cond)                                                   \
  do {                                                                \
    fu_test_checks++;                                                 \
    if (!(cond)) fu_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                          \
  do {                                                                                              \
    long long fu_a_ = (long long)(a), fu_b_ = (long long)(b);                                       \
    fu_test_checks++;                                                                               \
    if (fu_a_ != fu_b_) fu_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, fu_a_, fu_b_); \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                                     \
  do {                                                                                            \
    double fu_a_ = (double)(a), fu_b_ = (double)(b);                                              \
    fu_test_checks++;                                                                             \
    if (!(fabs(fu_a_ - fu_b_) <= (tol)))                                                          \
      fu_test_fail(__FILE__, __LINE__, "%s ~= %s: %.17g vs %.17g (tol %g)", #a, #b, fu_a_, fu_b_, \
                   (double)(tol));                                                                \
  } while (0)

#define CHECK_STR(a, b)                                                                      \
  do {                                                                                       \
    const char *fu_a_ = (a), *fu_b_ = (b);                                                   \
    fu_test_checks++;                                                                        \
    if (!fu_a_ || !fu_b_ || strcmp(fu_a_, fu_b_) != 0)                                       \
      fu_test_fail(__FILE__, __LINE__, "%s == %s:\n  got:  %s\n  want: %s", #a, #b,          \
                   fu_a_ ? fu_a_ : "(null)", fu_b_ ? fu_b_ : "(null)");                      \
  } while (0)

/* Each test file defines its tests as functions and lists them here. */
typedef struct fu_test_case {
  const char *name;
  void (*fn)(void);
} fu_test_case;

int fu_test_main(const fu_test_case *cases, int n);

#define FU_TEST_MAIN(...)                                              \
  int main(void) {                                                     \
    static const fu_test_case cases[] = {__VA_ARGS__};                 \
    return fu_test_main(cases, (int)(sizeof cases / sizeof cases[0])); \
  }
#define FU_TEST(fn) {#fn, fn}

#endif
