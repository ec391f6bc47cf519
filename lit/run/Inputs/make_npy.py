"""Writes a .npy file by hand, for the reader's error tests.

usage: make_npy.py OUT SHAPE DESCR DATA_BYTES
  SHAPE is a Python tuple literal such as "(4,)"; DATA_BYTES is how many
  bytes of data follow the header, whatever the shape says (so a file can be
  truncated or oversized on purpose).  Data are float32 ones, cut or padded.
"""
import struct
import sys

out, shape, descr, data_bytes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
data = struct.pack("<f", 1.0) * (data_bytes // 4 + 1)
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data[:data_bytes])
