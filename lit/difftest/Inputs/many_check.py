"""Checks a `fuser-run --device=kir --check` log of N generated fusions run
in one process: every fusion either ran (a summary line, every check
PASS) or stopped with "has no kernel after the pipeline"; no other error,
no FAIL, no sanitizer report (a leak or a bad access over the whole run)."""
import re
import sys

log, n = open(sys.argv[1]).read(), int(sys.argv[2])
ran = len(re.findall(r"^fusion @difftest_\d+:", log, re.M))
errors = re.findall(r"error: (.*)", log)
nokernel = sum("has no kernel after the pipeline" in e for e in errors)
assert "FAIL" not in log, "a check failed"
assert "Sanitizer" not in log, "a sanitizer report"
assert nokernel == len(errors), [e for e in errors if "has no kernel" not in e][:3]
assert ran + nokernel == n, (ran, nokernel, n)
assert ran > n // 2, "too few fusions ran"
print("%d fusions in one process: %d ran, %d had no kernel" % (n, ran, nokernel))
