#!/usr/bin/env python3
"""Seeds for fuzz_shm: valid segments of a few shapes (4 shape bytes, no patches), and a
few with one patch each of the kinds issue 12 reported (head near 2^62, ring_cap 0,
nslots, a lost count), drained before and after. Usage: make_seeds.py DIR"""
import os
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def patch(op, off, val):
    return struct.pack('<BHQ', op, off, val)


HEAD_OF_SLOT0 = 64  # offsetof(struct prof_slot, head), region 1 (slots)
seeds = {
    'small': bytes([0, 0, 10, 0]),
    'full': bytes([3, 3, 255, 0x80]),
    'drops': bytes([1, 0, 40, 0x08]),
    'head': bytes([1, 1, 30, 0]) + patch(16 | 4 | 3, HEAD_OF_SLOT0, 1 << 62),
    'ring_cap0': bytes([2, 2, 20, 0]) + patch(16 | 0 | 3, 40, 0),
    'nslots': bytes([0, 1, 20, 0]) + patch(16 | 0 | 2, 20, 1000000),
    'lost': bytes([0, 0, 60, 0]) + patch(16 | 4 | 3, 72, 1 << 63),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
