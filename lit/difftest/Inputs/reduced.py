"""Checks the difftest driver's reproducers: REDUCED and WHOLE hold the same
files (one per failed seed), each names its seed and holds the planted
`exp`, and the reducer made at least one of them shorter and none longer."""
import os
import sys

reduced, whole = sys.argv[1], sys.argv[2]
names = sorted(os.listdir(reduced))
assert names and names == sorted(os.listdir(whole)), (names, os.listdir(whole))
shorter = 0
for n in names:
    r = open(os.path.join(reduced, n)).read().splitlines()
    w = open(os.path.join(whole, n)).read().splitlines()
    assert r[0].startswith("// difftest FAIL, seed %s," % n[5:-4]), r[0]
    assert any("= exp " in line for line in r), n
    assert len(r) <= len(w), n
    shorter += len(r) < len(w)
assert shorter, "the reducer removed nothing"
print("reproducers: %d, %d reduced" % (len(names), shorter))
