#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Check the ICRC of every RoCE v2 (IPv4, UDP 4791) frame of a pcap file.

An independent reading of IBTA annex A17.3.3, not sroce's code: CRC-32
(as Ethernet's) over eight 0xff bytes for the LRH, the IPv4 header with
TOS, TTL and checksum set to ones, the UDP header with its checksum set to
ones, the BTH with its reserved byte (FECN, BECN) set to ones, and the
rest up to the ICRC, which the last four bytes hold, least significant
byte first.

    roce-icrc.py FILE [OPCODE [QPN]]

With OPCODE, only frames whose BTH opcode it is. For CNPs (0x81) the
layout of annex A17.9.3 is checked too: BECN set, P_Key 0xffff, PSN 0,
16 reserved bytes of zeros, nothing more; and with QPN, that every one
goes to that QP.

Prints "N frames, M with a bad ICRC, K truncated" (and for CNPs "L not
as annex A17 lays them out") and exits 1 if any is bad or none was
checked.

    roce-icrc.py --flush-forms FILE [SRC_IP]

Sorts the FLUSH frames (opcode 0x1c; from SRC_IP only, with it) by how
they are sealed: as IBTA says, or as rdma_rxe (6.2 on) seals them, whose
ICRC goes on over the transport headers once more, unmasked, in place of
the payload a FLUSH has none of. Prints "N FLUSH frames: A sealed as IBTA
says, B as rdma_rxe does, C neither" and exits 1 if C > 0 or N = 0.
"""
import struct
import sys
import zlib


def frames(path):
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack('<I', data[:4])[0]
    end = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    linktype = struct.unpack(end + 'I', data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack(end + 'IIII', data[off:off + 16])
        yield linktype, data[off + 16:off + 16 + incl], incl < orig
        off += 16 + incl


def roce_v2(linktype, frame):
    """The IPv4 packet of a RoCE v2 frame, or None."""
    if linktype == 1:           # Ethernet
        if frame[12:14] != b'\x08\x00':
            return None
        ip = frame[14:]
    elif linktype == 113:       # Linux cooked (tcpdump -i any)
        if frame[14:16] != b'\x08\x00':
            return None
        ip = frame[16:]
    else:
        return None
    if len(ip) < 20 or ip[0] != 0x45 or ip[9] != 17:
        return None
    if struct.unpack('>H', ip[22:24])[0] != 4791:
        return None
    total = struct.unpack('>H', ip[2:4])[0]
    return ip[:total]


def icrc_ok(ip, again=b''):
    """The ICRC over the masked packet, then over @again (rxe's FLUSH)."""
    pseudo = bytearray(b'\xff' * 8) + bytearray(ip[:-4])
    pseudo[8 + 1] = 0xff                    # TOS
    pseudo[8 + 8] = 0xff                    # TTL
    pseudo[8 + 10:8 + 12] = b'\xff\xff'     # IP checksum
    pseudo[8 + 26:8 + 28] = b'\xff\xff'     # UDP checksum
    pseudo[8 + 28 + 4] = 0xff               # BTH resv8a (FECN, BECN)
    return (zlib.crc32(bytes(pseudo) + again) ==
            struct.unpack('<I', ip[-4:])[0])


def cnp_ok(ip, qpn):
    bth = ip[28:]
    if len(bth) != 12 + 16 + 4:
        return False
    word1 = struct.unpack('>I', bth[4:8])[0]
    return (bth[0] == 0x81 and bth[2:4] == b'\xff\xff' and
            word1 & 0x40000000 and
            (qpn is None or word1 & 0xffffff == qpn) and
            struct.unpack('>I', bth[8:12])[0] & 0xffffff == 0 and
            bth[12:28] == bytes(16))


def flush_forms(path, src):
    n = ibta = rxe = 0
    for linktype, frame, truncated in frames(path):
        ip = roce_v2(linktype, frame)
        if ip is None or truncated or len(ip) != 20 + 8 + 12 + 4 + 16 + 4:
            continue
        if ip[28] != 0x1c or (src and ip[12:16] != src):
            continue
        n += 1
        if icrc_ok(ip):
            ibta += 1
        elif icrc_ok(ip, bytes(ip[28:-4])):
            rxe += 1
    print(f'{n} FLUSH frames: {ibta} sealed as IBTA says, {rxe} as rdma_rxe '
          f'does, {n - ibta - rxe} neither')
    return 1 if n - ibta - rxe or not n else 0


def main():
    if sys.argv[1] == '--flush-forms':
        src = bytes(int(b) for b in sys.argv[3].split('.')) \
            if len(sys.argv) > 3 else None
        return flush_forms(sys.argv[2], src)
    want = int(sys.argv[2], 0) if len(sys.argv) > 2 else None
    qpn = int(sys.argv[3], 0) if len(sys.argv) > 3 else None
    n = bad = short = layout = 0
    for linktype, frame, truncated in frames(sys.argv[1]):
        ip = roce_v2(linktype, frame)
        if ip is None or len(ip) < 20 + 8 + 12 + 4:
            continue
        if want is not None and ip[28] != want:
            continue
        if truncated:
            short += 1
            continue
        n += 1
        if not icrc_ok(ip):
            bad += 1
        if want == 0x81 and not cnp_ok(ip, qpn):
            layout += 1
    print(f'{n} frames, {bad} with a bad ICRC, {short} truncated')
    if want == 0x81:
        print(f'{layout} not as annex A17 lays them out')
    return 1 if bad or layout or not n else 0


if __name__ == '__main__':
    sys.exit(main())
