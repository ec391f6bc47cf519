"""Checks the printed source lines and carets of a diagnostics dump.

usage: check_carets.py FILE NAME MAX_BYTES
Every `error:` line that names NAME must be followed by a source line of at
most 206 columns (200 and two `...`) and a caret line whose caret sits under
the first character of NAME in the printed line.  The whole file must be at
most MAX_BYTES bytes.  Prints what it checked; exits 1 on a mismatch.
"""
import os
import sys

path, name, max_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
size = os.path.getsize(path)
if size > max_bytes:
    sys.exit("%s is %d bytes, more than %d" % (path, size, max_bytes))
lines = open(path).read().split("\n")
checked = 0
for i, line in enumerate(lines):
    if "error:" not in line or name not in line:
        continue
    src, caret = lines[i + 1], lines[i + 2]
    if len(src) > 206:
        sys.exit("source line of %d columns: %r" % (len(src), src[:80]))
    col = caret.index("^")
    if caret.strip() != "^" or not src.startswith(name, col):
        sys.exit("caret at column %d is not under %s: %r" % (col, name, src[col:col + 20]))
    checked += 1
print("checked %d carets, %d bytes" % (checked, size))
sys.exit(0 if checked else 1)
