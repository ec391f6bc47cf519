"""Checks the difftest driver's reproducers: REDUCED and WHOLE hold the same
files (one per failed seed), each names its seed and holds the planted
`exp`, and the reducer made at least one of them shorter, none longer,
and shrank the sizes of at least one."""
import os
import re
import sys


def size_total(lines):
    """The sum of the constant extents in the types of `lines`."""
    lists = re.findall(r"\b(?:f64|f32|f16|bf16|i64|i32|bool)\[([^\]]*)\]", "\n".join(lines))
    return sum(int(x) for inner in lists for x in re.findall(r"\b\d+\b", inner))


reduced, whole = sys.argv[1], sys.argv[2]
names = sorted(os.listdir(reduced))
assert names and names == sorted(os.listdir(whole)), (names, os.listdir(whole))
shorter = smaller = 0
for n in names:
    r = open(os.path.join(reduced, n)).read().splitlines()
    w = open(os.path.join(whole, n)).read().splitlines()
    assert r[0].startswith("// difftest FAIL, seed %s," % n[5:-4]), r[0]
    assert any("= exp " in line for line in r), n
    assert len(r) <= len(w), n
    shorter += len(r) < len(w)
    smaller += size_total(r) < size_total(w)
assert shorter, "the reducer removed nothing"
assert smaller, "the reducer shrank no size"
print("reproducers: %d, %d reduced, %d with smaller sizes" % (len(names), shorter, smaller))
