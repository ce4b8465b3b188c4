#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The RoCE v1 ICRC test vector of sroce_kunit_icrc.c, computed apart
from the kernel: Python's zlib CRC-32 over the pseudo-packet IBTA annex
A16 describes (64 bits of ones for the absent LRH, the GRH with traffic
class, flow label and hop limit set to ones, the BTH with its FECN/BECN
byte set to ones, the rest as sent). Prints the frame from the GRH to
the ICRC as a C array."""
import struct
import zlib

payload = b"RoCE v1 frame"                      # 13 bytes: pad 3
pad = (4 - len(payload) % 4) % 4
sgid = bytes.fromhex("fe800000000000005054 00fffe770001".replace(" ", ""))
dgid = bytes.fromhex("fe800000000000005054 00fffe770002".replace(" ", ""))
# BTH: SEND_ONLY (0x04), SE 0, M 0, pad, TVer 0, P_Key 0xffff,
# dest QP 0x000011, AckReq, PSN 0x123456.
bth = struct.pack(">BBHI I", 0x04, pad << 4, 0xffff, 0x000011,
                  0x80000000 | 0x123456)
plen = len(bth) + len(payload) + pad + 4
# GRH: version 6, traffic class 0x28, flow label 0x12345, next header
# 0x1B, hop limit 64.
grh = struct.pack(">IHBB", (6 << 28) | (0x28 << 20) | 0x12345, plen,
                  0x1B, 64) + sgid + dgid

masked_grh = bytearray(grh)
masked_grh[0:4] = b"\x6f\xff\xff\xff"
masked_grh[7] = 0xff
masked_bth = bytearray(bth)
masked_bth[4] = 0xff
pseudo = b"\xff" * 8 + bytes(masked_grh) + bytes(masked_bth) + payload + \
    b"\0" * pad
frame = grh + bth + payload + b"\0" * pad + struct.pack("<I",
                                                      zlib.crc32(pseudo))
print("/* From tests/kunit/roce-v1-vector.py. */")
print("static const u8 sroce_kunit_v1_send_only[] = {")
for i in range(0, len(frame), 12):
    print("\t" + " ".join("0x%02x," % b for b in frame[i:i + 12]))
print("};")
