#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# sroce_trace.py - a scripted RC connection for tests/vm/57-trace.sh, whose
# tracepoint events and resource details the caller checks between steps.
#
#   sroce_trace.py DEV_A GID_INDEX_A DEV_B GID_INDEX_B
#
# One process opens both devices (RDMA devices are visible from every
# network namespace) and connects an RC QP on each to the other: A sends,
# B responds. Each step prints one "step NAME key=value ..." line, then
# waits for a line on stdin before the next (the caller reads the trace
# and "rdma resource show" meanwhile):
#
#   ready    QPs in RTS, nothing sent: A's first PSN is PSN
#   traffic  10 RDMA WRITEs of 4096 bytes (4 packets each at path MTU 1024,
#            data checked at B), then a SEND B has no receive for: B posts
#            it 50 ms later (RNR NAK, timer 14 = 1280 us); B's receive
#            completion is left in its CQ, unpolled
#   odp      a WRITE of 8192 bytes into B's ODP MR, untouched so far (an
#            RNR NAK while B faults the pages in)
#   error    a WRITE with an rkey that names nothing, wr_id 0x5eed:
#            REM_ACCESS_ERR at A, both QPs in ERR
#   closed   the QPs destroyed (A's first)
#
# Exit status 0 when every operation ended as described, 1 otherwise (the
# reason on stderr).
#
# Debian's python3-pyverbs: run with /usr/bin/python3.
import sys
import time

from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
import pyverbs.enums as e
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE

PSN_A = 100		# A's first PSN (B expects it)
PSN_B = 500
MTU = e.IBV_MTU_1024
RNR_TIMER = 14		# 1280 us
WRITES, WRITE_LEN = 10, 4096
ODP_LEN = 8192
BAD_RKEY = 0x00dead42	# key index 0xdead: no MR there
ERR_WR_ID = 0x5eed
REMOTE = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_READ)


def fail(msg):
    print("sroce_trace: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def step(name, **kv):
    print("step " + name + "".join(" %s=%s" % i for i in kv.items()),
          flush=True)
    if name != "closed" and not sys.stdin.readline():
        fail("stdin closed before the step after " + name)


class Side:
    def __init__(self, dev, gid_index):
        self.ctx = Context(name=dev)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        self.scq = CQ(self.ctx, 64)
        self.rcq = CQ(self.ctx, 16)
        self.mr = MR(self.pd, 65536, REMOTE)
        cap = QPCap(max_send_wr=64, max_recv_wr=16, max_send_sge=1,
                    max_recv_sge=1)
        init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.scq, rcq=self.rcq,
                          cap=cap)
        self.qp = QP(self.pd, init)

    def connect(self, peer, sq_psn, rq_psn):
        a = QPAttr()
        a.qp_access_flags = REMOTE
        a.pkey_index = 0
        a.port_num = 1
        self.qp.to_init(a)
        a = QPAttr()
        a.path_mtu = MTU
        a.dest_qp_num = peer.qp.qp_num
        a.rq_psn = rq_psn
        a.max_dest_rd_atomic = 1
        a.min_rnr_timer = RNR_TIMER
        gr = GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index)
        a.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
        self.qp.to_rtr(a)
        a = QPAttr()
        a.sq_psn = sq_psn
        a.timeout = 14
        a.retry_cnt = 7
        a.rnr_retry = 7
        a.max_rd_atomic = 1
        self.qp.to_rts(a)


def poll(cq, n, what, secs=10):
    """The next @n completions of @cq, within @secs."""
    wcs, end = [], time.monotonic() + secs
    while len(wcs) < n:
        got, new = cq.poll(n - len(wcs))
        wcs += new[:got]
        if time.monotonic() > end:
            fail("%s: %d of %d completions in %d s" % (what, len(wcs), n, secs))
    return wcs


def expect(wcs, status, what):
    for wc in wcs:
        if wc.status != status:
            fail("%s: wr_id 0x%x status %d, expected %d" %
                 (what, wc.wr_id, wc.status, status))


def write(a, b_mr, laddr, loff, length, wr_id, raddr, rkey):
    sge = SGE(laddr + loff, length, a.mr.lkey)
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[sge],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rkey, raddr)
    a.qp.post_send(wr)


def traffic(a, b):
    pattern = bytes((i * 7 + 3) & 0xff for i in range(WRITE_LEN))
    a.mr.write(pattern, WRITE_LEN, 0)
    for i in range(WRITES):
        write(a, b.mr, a.mr.buf, 0, WRITE_LEN, i, b.mr.buf + i * WRITE_LEN,
              b.mr.rkey)
    expect(poll(a.scq, WRITES, "WRITEs"), e.IBV_WC_SUCCESS, "WRITEs")
    for i in range(WRITES):
        if b.mr.read(WRITE_LEN, i * WRITE_LEN) != pattern:
            fail("WRITE %d: B's memory differs" % i)
    # A SEND B has no receive for yet: RNR NAK, then it lands.
    sge = SGE(a.mr.buf, 64, a.mr.lkey)
    a.qp.post_send(SendWR(wr_id=0x77, opcode=e.IBV_WR_SEND, num_sge=1,
                          sg=[sge], send_flags=e.IBV_SEND_SIGNALED))
    time.sleep(0.05)
    b.qp.post_recv(RecvWR(wr_id=0x88, num_sge=1,
                          sg=[SGE(b.mr.buf + 60000, 64, b.mr.lkey)]))
    expect(poll(a.scq, 1, "SEND"), e.IBV_WC_SUCCESS, "SEND")


def odp(a, b):
    mr = MR(b.pd, ODP_LEN, REMOTE | e.IBV_ACCESS_ON_DEMAND)
    write(a, mr, a.mr.buf, 0, ODP_LEN, 0x0d, mr.buf, mr.rkey)
    expect(poll(a.scq, 1, "ODP WRITE"), e.IBV_WC_SUCCESS, "ODP WRITE")
    if mr.read(ODP_LEN, 0) != a.mr.read(ODP_LEN, 0):
        fail("ODP WRITE: B's memory differs")
    return mr


def main():
    if len(sys.argv) != 5:
        fail("usage: sroce_trace.py DEV_A GID_INDEX_A DEV_B GID_INDEX_B")
    a = Side(sys.argv[1], int(sys.argv[2]))
    b = Side(sys.argv[3], int(sys.argv[4]))
    a.connect(b, PSN_A, PSN_B)
    b.connect(a, PSN_B, PSN_A)
    step("ready", qpn_a=a.qp.qp_num, qpn_b=b.qp.qp_num, psn=PSN_A,
         packets=0)
    traffic(a, b)
    step("traffic", packets=WRITES * WRITE_LEN // 1024 + 1)
    mr = odp(a, b)
    step("odp", rkey="0x%x" % mr.rkey, addr="0x%x" % mr.buf, len=ODP_LEN,
         packets=ODP_LEN // 1024)
    write(a, b.mr, a.mr.buf, 0, 8, ERR_WR_ID, b.mr.buf, BAD_RKEY)
    expect(poll(a.scq, 1, "bad rkey"), e.IBV_WC_REM_ACCESS_ERR, "bad rkey")
    step("error", wr_id="0x%x" % ERR_WR_ID)
    a.qp.close()
    b.qp.close()
    step("closed")


main()
