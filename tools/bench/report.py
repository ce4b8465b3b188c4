#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The report half of "make bench": read the raw run files that
tools/bench/guest.sh left in DIR/raw, and write

  DIR/results.csv   every figure: median, min, max over the rounds, and its
                    ratio to rdma_rxe, TCP (iperf3) and memcpy
  DIR/table.txt     the same as a table (also printed)
  DIR/bench.png     bandwidth against message size, one line per transport
                    (needs python3-matplotlib; skipped without it)

  report.py [--no-png] DIR
  report.py --self-test SAMPLES_DIR     parse captured outputs, check figures

Figures (perftest's "MB/sec" is MiB/s; so is everything here):
  MiB/s, Mpps        perftest's BW average and MsgRate (duration mode, the
                     middle of the run); iperf3's received bits/s
  t_typical, p99     perftest latency columns, microseconds
  CPU s/GB           guest CPU seconds (all vCPUs, both ends) per 10^9 bytes:
                     busy fraction of /proc/stat over the measured window
                     (perftest --cpu_util; for iperf3, or when perftest
                     prints 0, the whole run) x vCPUs / bytes per second
  doorbells/msg      sroce "doorbells" counter delta (both devices) per
                     message posted (MsgRate x duration for bandwidth runs)
  retransmissions    sroce retransmitted_packets and retransmit_timeouts
                     (both devices), rdma_rxe completer_retry_err, iperf3
                     retransmits: totals over all runs of a round
Nothing passes or fails here.
"""
import contextlib
import csv
import io
import json
import os
import re
import shutil
import statistics
import sys
import tempfile

GB = 1e9
MIB = 1048576.0


# ---- parsing --------------------------------------------------------------

def parse_header(lines):
    """'# key=value' lines -> dict (the first '=' splits)."""
    h = {}
    for ln in lines:
        if ln.startswith('# ') and '=' in ln:
            k, v = ln[2:].split('=', 1)
            if re.fullmatch(r'[a-z0-9_]+', k):
                h[k] = v.strip()
    return h


def parse_stat(s):
    """First line of /proc/stat -> (busy, total) ticks."""
    f = [int(x) for x in s.split()[1:9]]
    while len(f) < 8:
        f.append(0)
    total = sum(f)
    idle = f[3] + f[4]
    return total - idle, total


def busy_fraction(h):
    if 'stat0' not in h or 'stat1' not in h:
        return None
    b0, t0 = parse_stat(h['stat0'])
    b1, t1 = parse_stat(h['stat1'])
    if t1 <= t0:
        return None
    return (b1 - b0) / (t1 - t0)


def parse_counters(s):
    """'dev:name=value ...' -> {(dev, name): value}."""
    c = {}
    for tok in s.split():
        m = re.fullmatch(r'([^:]+):([^=]+)=(-?\d+)', tok)
        if m:
            c[(m.group(1), m.group(2))] = int(m.group(3))
    return c


def counter_delta(h, name):
    """Sum over devices of counter NAME's change during the run, or None."""
    if 'counters0' not in h or 'counters1' not in h:
        return None
    c0, c1 = parse_counters(h['counters0']), parse_counters(h['counters1'])
    keys = [k for k in c1 if k[1] == name and k in c0]
    if not keys:
        return None
    return sum(c1[k] - c0[k] for k in keys)


COLUMN = re.compile(r'#\w+|[^\s\[\]][^\[\]]*?\[[^\]]*\]')


def parse_perftest(text):
    """perftest client output -> {column name: float} of its result row,
    e.g. {'#bytes': 65536, 'BW average[MB/sec]': 27.1, ...}; None if none."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if not ln.lstrip().startswith('#bytes'):
            continue
        names = [n.strip() for n in COLUMN.findall(ln)]
        for row in lines[i + 1:]:
            vals = row.split()
            if not vals or not re.fullmatch(r'\d+', vals[0]):
                continue
            try:
                nums = [float(v) for v in vals]
            except ValueError:
                continue
            return dict(zip(names, nums))
    return None


def parse_iperf3(text):
    """iperf3 -J output -> {'bps': received bits/s, 'retransmits': n}."""
    start = text.find('{')
    if start < 0:
        return None
    try:
        j = json.loads(text[start:])
    except ValueError:
        return None
    end = j.get('end', {})
    recv = end.get('sum_received', {})
    if 'bits_per_second' not in recv:
        return None
    return {'bps': float(recv['bits_per_second']),
            'retransmits': end.get('sum_sent', {}).get('retransmits')}


TCPLAT_LINE = re.compile(r'^tcplat: (\d+) round trips of (\d+) B in [\d.]+ s, one way typical '
                         r'([\d.]+) p99 ([\d.]+) max [\d.]+ us', re.M)


def parse_tcplat(text):
    """tools/bench/tcplat.cpp's client line -> {'iters', 'size', 't_typical', 'p99'}."""
    m = TCPLAT_LINE.search(text)
    if not m:
        return None
    return {'iters': int(m.group(1)), 'size': int(m.group(2)),
            't_typical': float(m.group(3)), 'p99': float(m.group(4))}


def parse_memcpy(text):
    m = re.search(r'^memcpy: (\d+) bytes in ([\d.]+) s, ([\d.]+) MiB/s, CPU ([\d.]+) s',
                  text, re.M)
    if not m:
        return None
    return {'mibs': float(m.group(3)), 'bytes': int(m.group(1)), 'cpu': float(m.group(4))}


CRC_LINE = re.compile(r'^crc: (\S+) +(\d+) B: +([\d.]+) MiB/s, +([\d.]+) ns per packet', re.M)


def parse_crc(text):
    """tools/bench/crc.cpp output -> {(method, size): MiB/s}."""
    return {(m.group(1), int(m.group(2))): float(m.group(3)) for m in CRC_LINE.finditer(text)}


def crc_table(raw_dir):
    """The ICRC's cost beside memcpy's, median over the rounds' crc-r*.log."""
    per = {}
    for name in sorted(os.listdir(raw_dir)):
        if name.startswith('crc-') and name.endswith('.log'):
            with open(os.path.join(raw_dir, name), encoding='utf-8', errors='replace') as f:
                for k, v in parse_crc(f.read()).items():
                    per.setdefault(k, []).append(v)
    if not per:
        return ''
    methods = [m for m in ('table', 'slice8', 'pclmul', 'memcpy') if any(k[0] == m for k in per)]
    body = []
    for size in sorted({k[1] for k in per}):
        mem = summary(per.get(('memcpy', size), []))
        row = [f'{size} B packets']
        for m in methods:
            r = summary(per.get((m, size), []))
            if not r:
                row.append('-')
                continue
            r['metric'] = 'MiB/s'
            cell = spread(r)
            if m != 'memcpy' and mem and mem['median']:
                cell += f' ({r["median"] / mem["median"]:.2f}x)'
            row.append(cell)
        body.append(tuple(row))
    out = render('Per-byte ceilings in the guest (MiB/s, one thread; x = of memcpy): CRC-32, '
                 'which every packet pays twice (tools/bench/crc.cpp)',
                 ('',) + tuple(methods), body)
    out.append('slice8 is the kernel\'s crc32_le() (sroce), pclmul the crc32-pclmul crypto '
               'driver ("crc32" shash).')
    return '\n'.join(out) + '\n'


PINGPONG_LINE = re.compile(
    r'^pingpong: (\d+) round trips in ([\d.]+) s, typical ([\d.]+) p99 ([\d.]+) us; '
    r'(\d+) stalls \(> (\d+) us\), ([\d.]+) per s, each typical ([\d.]+) p90 ([\d.]+) '
    r'max ([\d.]+) us', re.M)
PINGPONG_KEYS = ('typical us', 'p99 us', 'stalls per s', 'stall typical us',
                 'stall p90 us', 'stall max us')


def parse_pingpong(text):
    """tools/bench/pingpong.cpp output -> {figure: value}, or None."""
    m = PINGPONG_LINE.search(text)
    if not m:
        return None
    g = [float(x) for x in m.groups()]
    return dict(zip(PINGPONG_KEYS, (g[2], g[3], g[6], g[7], g[8], g[9])))


def pingpong_table(raw_dir):
    """The guest's latency floor, median over the rounds' pingpong-r*.log."""
    per = {}
    for name in sorted(os.listdir(raw_dir)):
        if name.startswith('pingpong-') and name.endswith('.log'):
            with open(os.path.join(raw_dir, name), encoding='utf-8', errors='replace') as f:
                r = parse_pingpong(f.read())
            for k, v in (r or {}).items():
                per.setdefault(k, []).append(v)
    if not per:
        return ''
    row = ['2 threads, 1 cache line']
    for k in PINGPONG_KEYS:
        s = summary(per.get(k, []))
        if s:
            s['metric'] = 'us' if k.endswith('us') else 'per s'
        row.append(spread(s) if s else '-')
    out = render('Latency floor of the guest: a round trip between the two vCPUs through '
                 'shared memory, no kernel code (tools/bench/pingpong.cpp)',
                 ('',) + PINGPONG_KEYS, [tuple(row)])
    out.append('A stall is a round trip over 20 us (interrupts, the host descheduling a vCPU).')
    out.append('A latency test\'s round trip of T us meets one with a probability of about')
    out.append('stalls per s x T / 10^6: past 1 %, its p99 is a stall, whatever the device does.')
    return '\n'.join(out) + '\n'


MPI_LINE = re.compile(r'^mpi-bench: lat_us ([\d.]+) bw_mibs ([\d.]+)', re.M)
MPI_NAME = re.compile(r'^mpi-(sroce|tcp)-m(\d+)-r\d+\.log$')


def parse_mpi(text):
    """tests/tools/sroce_mpi.c --bench output -> {'lat_us', 'bw_mibs'}, or None."""
    m = MPI_LINE.search(text)
    if not m:
        return None
    return {'lat_us': float(m.group(1)), 'bw_mibs': float(m.group(2))}


def mpi_table(raw_dir):
    """MPI ping-pong over sroce (UCX) and TCP (ob1), median over the rounds."""
    per = {}
    for name in sorted(os.listdir(raw_dir)):
        n = MPI_NAME.match(name)
        if not n:
            continue
        with open(os.path.join(raw_dir, name), encoding='utf-8', errors='replace') as f:
            r = parse_mpi(f.read())
        for k, v in (r or {}).items():
            per.setdefault((int(n.group(2)), n.group(1), k), []).append(v)
    if not per:
        return ''
    body = []
    for mtu in sorted({k[0] for k in per}):
        cells = {}
        for tr in ('sroce', 'tcp'):
            for k, unit in (('lat_us', 'us'), ('bw_mibs', 'MiB/s')):
                s = summary(per.get((mtu, tr, k), []))
                if s:
                    s['metric'] = unit
                cells[(tr, k)] = s
        row = [f'MTU {mtu}']
        for k in ('lat_us', 'bw_mibs'):
            for tr in ('sroce', 'tcp'):
                row.append(spread(cells[(tr, k)]) if cells[(tr, k)] else '-')
            a, b = cells[('sroce', k)], cells[('tcp', k)]
            if a and b and a['median'] and b['median']:
                # x faster than TCP: lower latency, higher bandwidth.
                x = b['median'] / a['median'] if k == 'lat_us' else a['median'] / b['median']
                row.append(f'{x:.2f}x')
            else:
                row.append('-')
        body.append(tuple(row))
    out = render('MPI ping-pong between two namespaces (tests/tools/sroce_mpi.c --bench, '
                 'Open MPI, 2 ranks): sroce through UCX (rc_verbs) against TCP (pml ob1, '
                 'btl tcp)',
                 ('', '8 B latency (us) sroce', 'TCP', 'sroce vs TCP',
                  '1 MiB (MiB/s) sroce', 'TCP', 'sroce vs TCP'), body)
    out.append('Latency is half a round trip; x above 1 means sroce is better (lower latency, '
               'more bandwidth).')
    return '\n'.join(out) + '\n'


CONG_LINE = re.compile(r'^cong: (.*)$', re.M)
CONG_NAME = re.compile(r'^cong-(on|off|tcp)-n(\d+)-r\d+\.log$')


def jain(xs):
    """Jain's fairness index of the flows' rates (1: all equal)."""
    if not xs or not sum(xs):
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def parse_cong(text):
    """A congestion run (tools/bench/guest.sh cc_flows/cc_tcp) -> its figures.

    goodput MiB/s (payload, all flows), % of R (the bottleneck's rate),
    Jain's index over the flows, drop % (sroce: packets sroce0 sent that
    sroce1 did not receive, from the counters; TCP: RED's drops of what
    reached it, skbs: a GSO burst counts once, a lower bound),
    resent % (RDMA: retransmitted packets of tx_packets; TCP: iperf3's
    retransmits of its segments), latency p99 under load and unloaded.
    """
    m = CONG_LINE.search(text)
    if not m:
        return None
    f = m.group(1).split()
    kv = dict(zip(f[0::2], f[1::2]))
    try:
        rate = float(kv['rate_mbit'])
        sent, dropped = int(kv['sent']), int(kv['dropped'])
    except (KeyError, ValueError):
        return None
    r = {'mode': kv.get('mode'), 'flows': int(kv.get('flows', 0)),
         'drop %': 100.0 * dropped / (sent + dropped) if sent + dropped else None,
         'marked': int(kv['marked']) if kv.get('marked', '').isdigit() else None}
    if kv.get('mode') == 'tcp':
        start = text.find('{')
        try:
            j = json.loads(text[start:]) if start >= 0 else {}
        except ValueError:
            return None
        end = j.get('end', {})
        flows = [st['receiver']['bits_per_second'] / 8 / MIB
                 for st in end.get('streams', []) if 'receiver' in st]
        sent_b = end.get('sum_sent', {}).get('bytes')
        retx = end.get('sum_sent', {}).get('retransmits')
        r['resent %'] = 100.0 * retx / (sent_b / 1448) if retx is not None and sent_b else None
    else:
        try:
            flows = [float(x) for x in kv.get('flow_mibs', '').split(',')]
        except ValueError:
            return None
        c0 = c1 = {}
        h = parse_header(text.splitlines())
        if 'c0' in h and 'c1' in h:
            c0, c1 = parse_counters(h['c0']), parse_counters(h['c1'])
        key_tx, key_rt = ('sroce0', 'tx_packets'), ('sroce0', 'retransmitted_packets')
        if key_tx in c0 and key_tx in c1 and c1[key_tx] > c0[key_tx]:
            r['resent %'] = 100.0 * (c1[key_rt] - c0[key_rt]) / (c1[key_tx] - c0[key_tx])
        # Packets, not RED's skbs: RED counts a dropped GSO burst once
        # (measured: 6 drops, 144 packets). What sroce0 handed the stack
        # (tx_packets, with RED's early drops, which report success, and
        # tx_errors, its tail drops) less what sroce1 received.
        keys = (key_tx, ('sroce0', 'tx_errors'), ('sroce1', 'rx_packets'))
        if all(k in c0 and k in c1 for k in keys):
            tx, err, rx = (c1[k] - c0[k] for k in keys)
            if tx + err > 0:
                r['drop %'] = 100.0 * max(tx + err - rx, 0) / (tx + err)
        for k in ('lat_p99_us', 'lat_idle_p99_us'):
            try:
                r[k] = float(kv[k])
            except (KeyError, ValueError):
                r[k] = None
        if r.get('lat_p99_us') and r.get('lat_idle_p99_us'):
            r['lat x idle'] = r['lat_p99_us'] / r['lat_idle_p99_us']
    if not flows or any(x != x for x in flows):
        return None
    r['goodput'] = sum(flows)
    r['% of R'] = 100.0 * sum(flows) * MIB * 8 / (rate * 1e6)
    r['jain'] = jain(flows)
    r['rate_mbit'] = rate
    return r


def cong_table(raw_dir):
    """The congestion figures, median over the rounds."""
    per = {}
    rate = None
    for name in sorted(os.listdir(raw_dir)):
        n = CONG_NAME.match(name)
        if not n:
            continue
        with open(os.path.join(raw_dir, name), encoding='utf-8', errors='replace') as f:
            r = parse_cong(f.read())
        if not r:
            continue
        rate = r['rate_mbit']
        for k, v in r.items():
            if isinstance(v, (int, float)) and v is not None:
                per.setdefault((int(n.group(2)), n.group(1), k), []).append(v)
    if not per:
        return ''
    cols = (('goodput', 'MiB/s', 2), ('% of R', '%', 1), ('jain', '', 3),
            ('drop %', '%', 3), ('resent %', '%', 3), ('lat_p99_us', 'us', 0),
            ('lat x idle', 'x', 2))
    names = {'on': 'sroce, CC on', 'off': 'sroce, CC off', 'tcp': 'TCP (iperf3 -P N)'}
    body = []
    for nflows in sorted({k[0] for k in per}):
        for mode in ('on', 'off', 'tcp'):
            if not any(k[0] == nflows and k[1] == mode for k in per):
                continue
            row = [f'{nflows} flows, {names[mode]}']
            for k, _, d in cols:
                v = per.get((nflows, mode, k))
                row.append(f'{statistics.median(v):.{d}f}' if v else '-')
            body.append(tuple(row))
    out = render(f'Congestion: N flows of 64 KiB ib_write_bw (or TCP streams) through a '
                 f'{rate:g} Mbit/s bottleneck (HTB + RED ecn), one guest',
                 ('', 'goodput MiB/s', '% of R', 'Jain', 'drops %', 'resent %',
                  'p99 lat us', 'p99 x unloaded'), body)
    out.append('Goodput is payload (sroce: 1024 B a packet of 1082 on the wire, at most '
               '94.6 % of R; TCP: 1448 of 1514).')
    out.append('Drops: sroce, packets sroce0 sent that sroce1 did not receive (its counters); '
               'TCP, RED\'s count, in which a dropped GSO burst counts once (a lower bound).')
    out.append('Latency: a fifth QP\'s ib_send_lat through the same class, against its p99 '
               'alone.')
    return '\n'.join(out) + '\n'


PASSIVE_LINE = re.compile(r'passive: test=(\S+) round=(\d+) side=([ab]) busy=([\d.]+)'
                          r'(?: mibs=([\d.]+))?')
PASSIVE_NAMES = {'ib_write_bw': 'sroce ib_write_bw 64 KiB', 'ib_read_bw': 'sroce ib_read_bw 64 KiB',
                 'iperf3': 'TCP iperf3, 1 stream'}


def passive_table(path):
    """tools/bench/passive.sh's lines (two guests, one vCPU each) -> CPU s/GB
    of the active end (A) and of the passive end (B), median over the rounds."""
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
    except OSError:
        return ''
    runs = {}
    for m in PASSIVE_LINE.finditer(text):
        run = runs.setdefault((m.group(1), int(m.group(2))), {})
        run[m.group(3)] = float(m.group(4))
        if m.group(5):
            run['mibs'] = float(m.group(5))
    per = {}
    for (test, _), run in runs.items():
        if 'a' not in run or 'b' not in run or not run.get('mibs'):
            continue
        for k, v in (('MiB/s', run['mibs']), ('active', cpu_s_per_gb(run['a'], 1, run['mibs'])),
                     ('passive', cpu_s_per_gb(run['b'], 1, run['mibs']))):
            per.setdefault((test, k), []).append(v)
    if not per:
        return ''
    tcp = summary(per.get(('iperf3', 'passive'), []))
    body = []
    for test in PASSIVE_NAMES:
        cells = {k: summary(per.get((test, k), [])) for k in ('MiB/s', 'active', 'passive')}
        if not cells['MiB/s']:
            continue
        for k in ('active', 'passive'):
            cells[k]['metric'] = 'CPU s/GB'
        cells['MiB/s']['metric'] = 'MiB/s'
        vs = (fmt_ratio(cells['passive']['median'] / tcp['median'])
              if tcp and tcp['median'] else '-')
        body.append((PASSIVE_NAMES[test], spread(cells['MiB/s']), spread(cells['active']),
                     spread(cells['passive']), vs))
    out = render('The passive end: two guests (one vCPU each) joined by QEMU\'s Ethernet link, '
                 'MTU 1500 (tools/bench/passive.sh)',
                 ('', 'MiB/s', 'active end CPU s/GB', 'passive end CPU s/GB',
                  'passive vs TCP\'s'), body)
    out.append('CPU s/GB: the guest\'s busy share of /proc/stat over the middle of the run '
               '(one vCPU) per 10^9 bytes moved.')
    out.append('Passive: the end that only receives (WRITE: the target; READ: the one read '
               'from; TCP: the receiver).')
    return '\n'.join(out) + '\n'


def cpu_s_per_gb(util_fraction, ncpu, mibs):
    if util_fraction is None or not mibs:
        return None
    return util_fraction * ncpu / (mibs * MIB / GB)


def measure(path):
    """One raw file -> (header, {metric: value}); metrics absent if unknown."""
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
    lines = text.splitlines()
    h = parse_header(lines)
    body = '\n'.join(ln for ln in lines if not ln.startswith('# '))
    m = {}
    if h.get('rc', '0') != '0':
        return h, m
    ncpu = int(h.get('ncpu', '2'))
    kind = h.get('kind')
    if kind == 'perftest':
        r = parse_perftest(body)
        if not r:
            return h, m
        if h['test'].endswith('_lat'):
            m['t_typical'] = r.get('t_typical[usec]')
            m['p99'] = r.get('99% percentile[usec]')
            iters = r.get('#iterations', 0)
            msgs = iters * (1 if h['test'] == 'ib_read_lat' else 2)
        else:
            # A bandwidth of 0.00 with exit status 0 is perftest's
            # measurement gone wrong, not the transport's figure: seen
            # under TCG (2026-12-07, 2 of 52 runs) while the devices'
            # counters showed the whole transfer. Left out as failed.
            if not r.get('BW average[MB/sec]'):
                return h, {}
            m['MiB/s'] = r.get('BW average[MB/sec]')
            m['Mpps'] = r.get('MsgRate[Mpps]')
            # perftest now and then prints 0.00 (seen with -q 16): then
            # the /proc/stat deltas around the whole run stand in.
            util = r.get('CPU_Util[%]')
            util = util / 100.0 if util else busy_fraction(h)
            m['CPU s/GB'] = cpu_s_per_gb(util, ncpu, m['MiB/s'])
            msgs = (m['Mpps'] or 0) * 1e6 * float(h.get('duration', 0))
        db = counter_delta(h, 'doorbells')
        if db is not None and msgs:
            m['doorbells/msg'] = db / msgs
        if h['transport'] == 'sroce':
            m['retx packets'] = counter_delta(h, 'retransmitted_packets')
            m['retx timeouts'] = counter_delta(h, 'retransmit_timeouts')
        elif h['transport'] == 'rxe':
            m['retx packets'] = counter_delta(h, 'completer_retry_err')
    elif kind == 'iperf3':
        r = parse_iperf3(body)
        if not r:
            return h, m
        m['MiB/s'] = r['bps'] / 8 / MIB
        m['CPU s/GB'] = cpu_s_per_gb(busy_fraction(h), ncpu, m['MiB/s'])
        m['retx packets'] = r['retransmits']
    elif kind == 'tcplat':
        r = parse_tcplat(body)
        if not r:
            return h, m
        m['t_typical'] = r['t_typical']
        m['p99'] = r['p99']
    elif kind == 'memcpy':
        r = parse_memcpy(body)
        if not r:
            return h, m
        m['MiB/s'] = r['mibs']
        m['CPU s/GB'] = r['cpu'] / (r['bytes'] / GB)
    return h, {k: v for k, v in m.items() if v is not None}


# ---- aggregation ------------------------------------------------------------

def size_label(n):
    n = int(n)
    for unit, div in (('MiB', 1 << 20), ('KiB', 1 << 10)):
        if n >= div and n % div == 0:
            return f'{n // div} {unit}'
    return f'{n} B'


def config_key(h):
    """What a run measured, apart from transport, MTU and round."""
    t = h['test']
    if h['kind'] == 'tcplat':
        return (t, int(h['size']), 1)
    if h['kind'] != 'perftest':
        return (t, 0, 1)
    if h.get('variant') == 'odp':
        t += ' --odp'
    return (t, int(h['size']), int(h.get('qps', 1)))


def config_label(key):
    t, size, q = key
    if t == 'iperf3':
        return 'TCP iperf3, 1 stream'
    if t == 'memcpy':
        return 'memcpy, 1 thread, 64 MiB'
    if t == 'tcp_lat':
        return f'TCP request/response {size_label(size)}'
    if t == 'ib_atomic_bw':
        return 'ib_atomic_bw 8 B'
    s = f'{t} {size_label(size)}'
    return s + (f' -q {q}' if q != 1 else '')


TEST_ORDER = ('ib_send_bw', 'ib_write_bw', 'ib_read_bw', 'ib_atomic_bw', 'ib_send_lat',
              'ib_write_lat', 'ib_read_lat')


def config_order(cfg):
    t, size, q = cfg
    return (TEST_ORDER.index(t) if t in TEST_ORDER else 99, q, size)


def is_odp(cfg):
    return cfg[0].endswith(' --odp')


def collect(raw_dir):
    """-> {(mtu, transport, config_key): {metric: [values over rounds]}}."""
    data = {}
    for name in sorted(os.listdir(raw_dir)):
        if not name.endswith('.txt'):
            continue
        h, m = measure(os.path.join(raw_dir, name))
        if 'transport' not in h or 'test' not in h:
            continue
        key = (int(h.get('mtu', 0)), h['transport'], config_key(h))
        slot = data.setdefault(key, {})
        for k, v in m.items():
            slot.setdefault(k, []).append(v)
    return data


def run_status(raw_dir):
    """-> (number of runs, names of those that left no figure)."""
    names = sorted(n for n in os.listdir(raw_dir) if n.endswith('.txt'))
    failed = []
    for n in names:
        _, m = measure(os.path.join(raw_dir, n))
        if not m:
            failed.append(n[:-4])
    return len(names), failed


def summary(vals):
    if not vals:
        return None
    return {'median': statistics.median(vals), 'min': min(vals), 'max': max(vals),
            'n': len(vals)}


LOWER_IS_BETTER = {'t_typical', 'p99', 'CPU s/GB', 'doorbells/msg', 'retx packets',
                   'retx timeouts'}
UNITS = {'MiB/s': 'MiB/s', 'Mpps': 'Mpps', 't_typical': 'us', 'p99': 'us',
         'CPU s/GB': 's/GB', 'doorbells/msg': '/msg', 'retx packets': 'pkts',
         'retx timeouts': 'events'}
TRANSPORTS = ('sroce', 'rxe', 'tcp', 'memcpy')


def figures(data):
    """Rows of the report: dicts with mtu, transport, config, metric, the
    summary and the ratios of the median to rxe's, TCP's and memcpy's."""
    rows = []
    mtus = sorted({k[0] for k in data if k[0]})

    def ref(mtu, transport, cfg, metric):
        s = summary(data.get((mtu, transport, cfg), {}).get(metric, []))
        return s['median'] if s else None

    memcpy_cfg = ('memcpy', 0, 1)
    tcp_cfg = ('iperf3', 0, 1)
    for (mtu, tr, cfg), metrics in sorted(data.items(),
                                           key=lambda kv: (kv[0][0], kv[0][2], TRANSPORTS.index(kv[0][1]) if kv[0][1] in TRANSPORTS else 9)):
        for metric, vals in metrics.items():
            s = summary(vals)
            row = {'mtu': mtu, 'transport': tr, 'config': cfg, 'metric': metric, **s}
            med = s['median']

            def ratio(other):
                return med / other if other else None
            row['vs_rxe'] = ratio(ref(mtu, 'rxe', cfg, metric)) if tr in ('sroce', 'rxe') else None
            # ib_send_lat against TCP's request/response of the same size.
            if metric in ('t_typical', 'p99') and cfg[0] == 'ib_send_lat':
                row['vs_tcp'] = ratio(ref(mtu, 'tcp', ('tcp_lat', cfg[1], 1), metric))
            if metric in ('MiB/s', 'CPU s/GB'):
                for name, t, c in (('vs_tcp', 'tcp', tcp_cfg), ('vs_memcpy', 'memcpy', memcpy_cfg)):
                    refs = [ref(m, t, c, metric) for m in ([mtu] if t == 'tcp' else mtus + [0])]
                    refs = [r for r in refs if r]
                    row[name] = ratio(refs[0]) if refs else None
            rows.append(row)
    # QP scaling: ib_write_bw 64 KiB -q N over -q 1.
    for (mtu, tr, cfg) in list(data):
        t, size, q = cfg
        if t == 'ib_write_bw' and size == 65536 and q > 1:
            base = ref(mtu, tr, (t, size, 1), 'MiB/s')
            this = ref(mtu, tr, cfg, 'MiB/s')
            if base and this:
                rows.append({'mtu': mtu, 'transport': tr, 'config': cfg,
                             'metric': f'x of -q 1', 'median': this / base, 'min': None,
                             'max': None, 'n': None, 'vs_rxe': None})
    # On-demand paging: the --odp run over the same run with pinned MRs.
    for (mtu, tr, cfg) in list(data):
        if is_odp(cfg):
            pinned = (cfg[0][:-len(' --odp')],) + cfg[1:]
            base = ref(mtu, tr, pinned, 'MiB/s')
            this = ref(mtu, tr, cfg, 'MiB/s')
            if base and this:
                rows.append({'mtu': mtu, 'transport': tr, 'config': cfg,
                             'metric': 'x of pinned', 'median': this / base, 'min': None,
                             'max': None, 'n': None, 'vs_rxe': None})
    return rows


# ---- output -------------------------------------------------------------

def fmt(v, metric=''):
    if v is None:
        return '-'
    if metric in ('retx packets', 'retx timeouts'):
        return f'{v:.0f}'
    a = abs(v)
    if a >= 1000:
        return f'{v:.0f}'
    if a >= 100:
        return f'{v:.1f}'
    if a >= 1:
        return f'{v:.2f}'
    if a == 0:
        return '0'
    return f'{v:.3g}'


def fmt_ratio(v):
    return '-' if v is None else f'{v:.2f}x'


def write_csv(rows, path):
    with open(path, 'w', newline='', encoding='utf-8') as f:
        w = csv.writer(f)
        w.writerow(['mtu', 'transport', 'test', 'size', 'qps', 'figure', 'unit', 'rounds',
                    'median', 'min', 'max', 'vs_rxe', 'vs_tcp', 'vs_memcpy'])
        for r in rows:
            t, size, q = r['config']
            w.writerow([r['mtu'] or '', r['transport'], t, size or '', q, r['metric'],
                        UNITS.get(r['metric'], 'x'), r['n'] or '',
                        *('' if r.get(k) is None else f'{r[k]:.6g}'
                          for k in ('median', 'min', 'max', 'vs_rxe', 'vs_tcp', 'vs_memcpy'))])


def spread(r):
    if r is None:
        return '-'
    m = r['metric']
    s = fmt(r['median'], m)
    if r.get('n') and r['n'] > 1:
        s += f' [{fmt(r["min"], m)}-{fmt(r["max"], m)}]'
    return s


def render(title, hdr, body):
    """A plain-text table: first column left-aligned, the rest right."""
    widths = [max(len(str(c[i])) for c in body + [hdr]) for i in range(len(hdr))]

    def line(cells):
        return '  '.join(str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])
                         for i, c in enumerate(cells)).rstrip()
    head = line(hdr)
    return [title, head, '-' * len(head)] + [line(b) for b in body] + ['']


def table(rows, info=''):
    """Per MTU three tables (bandwidth, latency, cost): sroce and rdma_rxe
    as median [min-max], and sroce's ratios to rxe, TCP and memcpy; TCP and
    memcpy themselves at the end of the bandwidth and cost tables."""
    idx = {(r['mtu'], r['transport'], r['config'], r['metric']): r for r in rows}
    out = [info, ''] if info else []
    mtus = sorted({r['mtu'] for r in rows if r['mtu']})
    tcp_cfg, mem_cfg = ('iperf3', 0, 1), ('memcpy', 0, 1)

    def get(mtu, tr, cfg, metric):
        return idx.get((mtu if tr != 'memcpy' else 0, tr, cfg, metric))

    def ratio(r, k):
        return fmt_ratio(r.get(k)) if r else '-'
    for mtu in mtus:
        cfgs = sorted({r['config'] for r in rows if r['mtu'] == mtu
                       and r['transport'] in ('sroce', 'rxe')}, key=config_order)
        odp = [c for c in cfgs if is_odp(c)]
        cfgs = [c for c in cfgs if not is_odp(c)]
        bw = [c for c in cfgs if not c[0].endswith('_lat')]
        lat = [c for c in cfgs if c[0].endswith('_lat')]
        body = []
        for c in bw:
            s, x = get(mtu, 'sroce', c, 'MiB/s'), get(mtu, 'rxe', c, 'MiB/s')
            ms, mx = get(mtu, 'sroce', c, 'Mpps'), get(mtu, 'rxe', c, 'Mpps')
            qs, qx = get(mtu, 'sroce', c, 'x of -q 1'), get(mtu, 'rxe', c, 'x of -q 1')
            body.append((config_label(c), spread(s), spread(x), ratio(s, 'vs_rxe'),
                         ratio(s, 'vs_tcp'), ratio(s, 'vs_memcpy'),
                         fmt(ms and ms['median']), fmt(mx and mx['median']),
                         fmt_ratio(qs and qs['median']) if qs else '-',
                         fmt_ratio(qx and qx['median']) if qx else '-'))
        for tr, c in (('tcp', tcp_cfg), ('memcpy', mem_cfg)):
            r = get(mtu, tr, c, 'MiB/s')
            if r:
                body.append((config_label(c), spread(r), '-', '-',
                             '1.00x' if tr == 'tcp' else ratio(r, 'vs_tcp'),
                             ratio(r, 'vs_memcpy'), '-', '-', '-', '-'))
        if body:
            out += render(f'MTU {mtu}: bandwidth (MiB/s)',
                          ('', 'sroce', 'rdma_rxe', 'vs rxe', 'vs TCP', 'vs memcpy',
                           'sroce Mpps', 'rxe Mpps', 'sroce vs -q 1', 'rxe vs -q 1'), body)
        body = []
        for c in odp:
            pinned = (c[0][:-len(' --odp')],) + c[1:]
            x = get(mtu, 'sroce', c, 'x of pinned')
            body.append((config_label(c), spread(get(mtu, 'sroce', c, 'MiB/s')),
                         spread(get(mtu, 'sroce', pinned, 'MiB/s')),
                         fmt_ratio(x['median']) if x else '-',
                         spread(get(mtu, 'sroce', c, 'CPU s/GB')),
                         spread(get(mtu, 'sroce', pinned, 'CPU s/GB'))))
        if body:
            out += render(f'MTU {mtu}: on-demand paging (sroce, every MR --odp, pages '
                          'resident)',
                          ('', 'ODP MiB/s', 'pinned MiB/s', 'ODP vs pinned', 'ODP CPU s/GB',
                           'pinned CPU s/GB'), body)
        body = []
        for c in lat:
            st, xt = get(mtu, 'sroce', c, 't_typical'), get(mtu, 'rxe', c, 't_typical')
            sp, xp = get(mtu, 'sroce', c, 'p99'), get(mtu, 'rxe', c, 'p99')
            body.append((config_label(c), spread(st), spread(xt), ratio(st, 'vs_rxe'),
                         ratio(st, 'vs_tcp'), spread(sp), spread(xp), ratio(sp, 'vs_rxe'),
                         ratio(sp, 'vs_tcp')))
        tcp_lat = sorted({r['config'] for r in rows if r['mtu'] == mtu
                          and r['transport'] == 'tcp' and r['config'][0] == 'tcp_lat'},
                         key=lambda c: c[1])
        for c in tcp_lat:
            body.append((config_label(c), spread(get(mtu, 'tcp', c, 't_typical')), '-', '-',
                         '1.00x', spread(get(mtu, 'tcp', c, 'p99')), '-', '-', '1.00x'))
        if body:
            out += render(f'MTU {mtu}: latency (us, half a round trip)',
                          ('', 'sroce typical', 'rxe typical', 'vs rxe', 'vs TCP',
                           'sroce p99', 'rxe p99', 'vs rxe', 'vs TCP'), body)
        body = []
        for c in cfgs:
            s, x = get(mtu, 'sroce', c, 'CPU s/GB'), get(mtu, 'rxe', c, 'CPU s/GB')
            d = get(mtu, 'sroce', c, 'doorbells/msg')
            rs, rt = get(mtu, 'sroce', c, 'retx packets'), get(mtu, 'sroce', c, 'retx timeouts')
            rx = get(mtu, 'rxe', c, 'retx packets')
            body.append((config_label(c), spread(s), spread(x), ratio(s, 'vs_rxe'),
                         ratio(s, 'vs_tcp'), spread(d), spread(rs), spread(rt), spread(rx)))
        for tr, c in (('tcp', tcp_cfg), ('memcpy', mem_cfg)):
            r = get(mtu, tr, c, 'CPU s/GB')
            if r:
                rx = get(mtu, tr, c, 'retx packets')
                body.append((config_label(c), spread(r), '-', '-',
                             '1.00x' if tr == 'tcp' else ratio(r, 'vs_tcp'), '-',
                             spread(rx), '-', '-'))
        if body:
            out += render(f'MTU {mtu}: cost (CPU s/GB: guest CPU seconds per 10^9 bytes; '
                          'doorbells: system calls per message; retransmits per run)',
                          ('', 'sroce CPU', 'rxe CPU', 'vs rxe', 'vs TCP', 'doorbells/msg',
                           'sroce retx pkts', 'sroce retx timeouts', 'rxe retries'), body)
    out.append('median [min-max] over the rounds; ratios are sroce over the other, from the '
               'medians')
    out.append('(latency, CPU, doorbells: lower is better). TCP = iperf3, one stream, same '
               'veth and MTU;')
    out.append('TCP request/response = sroce_tcplat (as qperf tcp_lat, with percentiles), '
               'one connection, Nagle off,')
    out.append('the same number of round trips as the latency tests; ib_send_lat is put '
               'against it (vs TCP).')
    out.append('memcpy = one thread, 64 MiB buffers. Taken under QEMU TCG: compare ratios, '
               'not absolute figures,')
    out.append('and only from a quiet host.')
    return '\n'.join(out) + '\n'


def plot(rows, path, info=''):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    mtus = sorted({r['mtu'] for r in rows if r['mtu']})
    if not mtus:
        return False
    fig, axes = plt.subplots(1, len(mtus), figsize=(6.5 * len(mtus), 4.8), squeeze=False,
                             sharey=True)
    colours = {'sroce': 'tab:blue', 'rxe': 'tab:red', 'tcp': 'tab:green',
               'memcpy': 'tab:grey'}
    styles = {'ib_write_bw': '-', 'ib_send_bw': '--', 'ib_read_bw': ':'}
    for ax, mtu in zip(axes[0], mtus):
        for tr, name in (('sroce', 'sroce'), ('rxe', 'rdma_rxe')):
            for t, ls in styles.items():
                pts = sorted((r['config'][1], r['median'], r['min'], r['max']) for r in rows
                             if r['mtu'] == mtu and r['transport'] == tr
                             and r['metric'] == 'MiB/s' and r['config'][0] == t
                             and r['config'][2] == 1)
                if not pts:
                    continue
                xs = [p[0] for p in pts]
                ax.errorbar(xs, [p[1] for p in pts],
                            yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                            color=colours[tr], linestyle=ls, marker='o', markersize=3,
                            capsize=2, label=f'{name} {t}')
        for tr, cfg, label in (('tcp', ('iperf3', 0, 1), 'TCP (iperf3, 1 stream)'),
                               ('memcpy', ('memcpy', 0, 1), 'memcpy (1 thread)')):
            r = [r for r in rows if r['transport'] == tr and r['metric'] == 'MiB/s'
                 and r['mtu'] in ((mtu,) if tr == 'tcp' else (0,))]
            if r:
                ax.axhline(r[0]['median'], color=colours[tr], linestyle='-.', label=label)
        ax.set_xscale('log', base=2)
        ax.set_yscale('log')
        sizes = sorted({r['config'][1] for r in rows if r['mtu'] == mtu
                        and r['metric'] == 'MiB/s' and r['config'][0] in styles})
        ax.set_xticks(sizes, [size_label(x) for x in sizes])
        ax.minorticks_off()
        ax.grid(True, which='major', axis='y', alpha=0.3)
        ax.set_xlabel('message size (bytes)')
        ax.set_title(f'MTU {mtu}')
        ax.grid(True, which='major', axis='x', alpha=0.3)
    axes[0][0].set_ylabel('bandwidth (MiB/s, median over rounds)')
    axes[0][-1].legend(fontsize=7, loc='lower right')
    fig.suptitle('sroce vs rdma_rxe vs TCP (QEMU TCG guest, one veth pair)'
                 + (f'\n{info}' if info else ''), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def report(d, png=True):
    info = ''
    try:
        with open(os.path.join(d, 'run-info.txt'), encoding='utf-8') as f:
            info = f.read().strip()
    except OSError:
        pass
    rows = figures(collect(os.path.join(d, 'raw')))
    cong = cong_table(os.path.join(d, 'raw'))
    passive = passive_table(os.path.join(d, 'passive.log'))
    if not rows and not cong and not passive:
        print(f'report: no results in {d}/raw or {d}/passive.log', file=sys.stderr)
        return 1
    if not rows:
        # bench --congestion or --passive: that table alone.
        text = (info + '\n\n' if info else '') + cong + passive
        with open(os.path.join(d, 'table.txt'), 'w', encoding='utf-8') as f:
            f.write(text)
        sys.stdout.write(text)
        print(f'\nwrote {d}/table.txt')
        return 0
    write_csv(rows, os.path.join(d, 'results.csv'))
    text = table(rows, info)
    crc = crc_table(os.path.join(d, 'raw'))
    if crc:
        text += '\n' + crc
    floor = pingpong_table(os.path.join(d, 'raw'))
    if floor:
        text += '\n' + floor
    mpi = mpi_table(os.path.join(d, 'raw'))
    if mpi:
        text += '\n' + mpi
    if cong:
        text += '\n' + cong
    if passive:
        text += '\n' + passive
    total, failed = run_status(os.path.join(d, 'raw'))
    text += f'{total} runs, {len(failed)} without a result (left out)' + (
        ': ' + ', '.join(failed) if failed else '') + '\n'
    with open(os.path.join(d, 'table.txt'), 'w', encoding='utf-8') as f:
        f.write(text)
    sys.stdout.write(text)
    print(f'\nwrote {d}/results.csv, {d}/table.txt', end='')
    if png:
        if plot(rows, os.path.join(d, 'bench.png'), info):
            print(f', {d}/bench.png')
        else:
            print(' (no chart: python3-matplotlib is missing)')
    else:
        print()
    return 0


# ---- self-test ------------------------------------------------------------

def self_test(samples):
    """Parse captured outputs in SAMPLES and check the figures (TAP)."""
    n = 0
    fails = 0

    def check(desc, cond):
        nonlocal n, fails
        n += 1
        print(('ok' if cond else 'not ok') + f' {n} - {desc}')
        fails += 0 if cond else 1

    def read(name):
        with open(os.path.join(samples, name), encoding='utf-8') as f:
            return f.read()

    bw = parse_perftest(read('ib_write_bw.out'))
    check('ib_write_bw row', bw and bw['#bytes'] == 65536 and bw['BW average[MB/sec]'] == 49.76
          and bw['MsgRate[Mpps]'] == 0.000796 and bw['CPU_Util[%]'] == 83.33)
    lat = parse_perftest(read('ib_send_lat.out'))
    check('ib_send_lat row', lat and lat['t_typical[usec]'] == 46.45
          and lat['99% percentile[usec]'] == 4847.28 and lat['#iterations'] == 1000)
    check('no row in a failed run', parse_perftest(read('failed.out')) is None)
    ip = parse_iperf3(read('iperf3.json'))
    check('iperf3 JSON', ip and abs(ip['bps'] - 1.2e9) < 1e7 and ip['retransmits'] == 3)
    mc = parse_memcpy('memcpy: 3758096384 bytes in 2.010 s, 1783.1 MiB/s, CPU 2.001 s\n')
    check('memcpy line', mc and mc['mibs'] == 1783.1)
    cr = parse_crc('crc: slice8   1024 B:   1538.6 MiB/s,       635 ns per packet\n'
                   'crc: memcpy   4096 B:  98055.8 MiB/s,        40 ns per packet\n')
    check('crc lines', cr == {('slice8', 1024): 1538.6, ('memcpy', 4096): 98055.8})
    pp = parse_pingpong('pingpong: 4551861 round trips in 2.00 s, typical 0.35 p99 0.55 us; '
                        '1627 stalls (> 20 us), 813 per s, each typical 48 p90 198 max 25165 us\n')
    check('pingpong line', pp == {'typical us': 0.35, 'p99 us': 0.55, 'stalls per s': 813.0,
                                  'stall typical us': 48.0, 'stall p90 us': 198.0,
                                  'stall max us': 25165.0})
    mp = parse_mpi('mpi-bench: lat_us 41.25 bw_mibs 88.5 (2000 and 50 round trips)\n')
    check('mpi-bench line', mp == {'lat_us': 41.25, 'bw_mibs': 88.5})
    check('no mpi-bench line in a failed run', parse_mpi('mpirun: error\n') is None)
    co = parse_cong(read('raw/cong-on-n4-r1.log'))
    check('congestion, CC on: goodput, share of R, Jain, drops, resent, latency',
          co and co['goodput'] == 10.0 and abs(co['% of R'] - 10 * MIB * 8 / 1e6) < 1e-9
          and abs(co['jain'] - 1.0) < 1e-12 and abs(co['drop %'] - 100 * 100 / 10050) < 1e-9
          and abs(co['resent %'] - 0.2) < 1e-9 and co['lat x idle'] == 2.0)
    cf = parse_cong(read('raw/cong-off-n4-r1.log'))
    check('congestion, CC off: an unfair split', cf and abs(cf['jain'] - 36 / 72) < 1e-12
          and cf['drop %'] == 10.0 and cf['resent %'] == 50.0)
    ct = parse_cong(read('raw/cong-tcp-n4-r1.log'))
    check('congestion, TCP: streams from iperf3, its retransmits of its segments',
          ct and ct['goodput'] == 5.0 and abs(ct['resent %'] - 1.0) < 1e-9
          and ct['jain'] == 1.0)
    check('no congestion line, no figures', parse_cong('cong: mode on\n') is None)
    ctab = cong_table(os.path.join(samples, 'raw'))
    check('congestion table: a row per mode', '4 flows, sroce, CC on' in ctab
          and '4 flows, TCP' in ctab and '100 Mbit/s' in ctab)
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, 'raw'))
        for name in os.listdir(os.path.join(samples, 'raw')):
            if CONG_NAME.match(name):
                shutil.copy(os.path.join(samples, 'raw', name), os.path.join(tmp, 'raw'))
        with contextlib.redirect_stdout(io.StringIO()):
            rc = report(tmp, png=False)
        with open(os.path.join(tmp, 'table.txt'), encoding='utf-8') as f:
            only = f.read()
        check('bench --congestion: the congestion table alone',
              rc == 0 and '4 flows, sroce, CC on' in only and 'ib_send_bw' not in only)
    pt = passive_table(os.path.join(samples, 'passive.log'))
    wr = 0.2 / (20 * MIB / GB), 0.3 / (40 * MIB / GB)
    tcp_b = 0.6 / (30 * MIB / GB)
    check('passive end: CPU s/GB per end, median over rounds, against TCP\'s receiver',
          f'{fmt(statistics.median(wr))} [{fmt(min(wr))}-{fmt(max(wr))}]' in pt
          and f'{statistics.median(wr) / tcp_b:.2f}x' in pt and 'TCP iperf3' in pt
          and 'ib_read_bw' not in pt)
    check('no passive log, no table', passive_table(os.path.join(samples, 'none.log')) == '')
    mt = mpi_table(os.path.join(samples, 'raw'))
    check('MPI table: medians and ratios to TCP',
          '40.00 [30.00-50.00]' in mt and '2.00x' in mt and '1.50x' in mt)
    h, m = measure(os.path.join(samples, 'raw', 'sroce-m1500-r1-ib_send_bw-s64-q1.txt'))
    check('raw header', h.get('transport') == 'sroce' and h.get('size') == '64')
    check('doorbells per message', abs(m.get('doorbells/msg', -1) - 208 / (0.015235e6 * 4)) < 1e-9)
    check('CPU s/GB from CPU_Util', abs(m['CPU s/GB'] - 0.9953 * 2 / (0.93 * MIB / GB)) < 1e-6)
    check('retransmissions', m.get('retx packets') == 5 and m.get('retx timeouts') == 1)
    h['stat0'], h['stat1'] = 'cpu  100 0 100 200 0 0 0 0 0 0', 'cpu  200 0 200 300 0 0 100 0 0 0'
    check('CPU s/GB around the run', abs(busy_fraction(h) - 0.75) < 1e-9)
    data = collect(os.path.join(samples, 'raw'))
    rows = figures(data)
    r = [x for x in rows if x['transport'] == 'sroce' and x['metric'] == 'MiB/s'
         and x['config'] == ('ib_send_bw', 64, 1)]
    check('median and spread over rounds', r and r[0]['median'] == 0.93 and r[0]['min'] == 0.9
          and r[0]['max'] == 1.1 and r[0]['n'] == 3)
    check('ratio to rxe', r and abs(r[0]['vs_rxe'] - 0.93 / 0.31) < 1e-9)
    check('ratio to TCP', r and abs(r[0]['vs_tcp'] - 0.93 / (1.2e9 / 8 / MIB)) < 1e-9)
    check('failed run left out', data[(1500, 'rxe', ('ib_send_bw', 64, 1))]['MiB/s'] == [0.31])
    check('table renders', 'ib_send_bw 64 B' in table(rows))
    o = [x for x in rows if x['config'] == ('ib_send_bw --odp', 64, 1)
         and x['metric'] == 'x of pinned']
    check('--odp run: its own figures, ratio to the pinned median',
          data[(1500, 'sroce', ('ib_send_bw --odp', 64, 1))]['MiB/s'] == [0.62]
          and o and abs(o[0]['median'] - 0.62 / 0.93) < 1e-9)
    t = table(rows)
    check('--odp run in the ODP table only', 'on-demand paging' in t and '0.67x' in t
          and t.count('ib_send_bw --odp 64 B') == 1)
    tl = parse_tcplat('tcplat: 10000 round trips of 8 B in 1.23 s, one way typical 61.50 '
                      'p99 140.25 max 900.00 us\n')
    check('tcplat line', tl == {'iters': 10000, 'size': 8, 't_typical': 61.5, 'p99': 140.25})
    check('no tcplat line in a failed run', parse_tcplat('tcplat: connect: refused\n') is None)
    lt = [x for x in rows if x['transport'] == 'sroce' and x['config'] == ('ib_send_lat', 8, 1)]
    check('ib_send_lat against TCP request/response of 8 B, typical and p99',
          {x['metric']: x.get('vs_tcp') for x in lt} == {'t_typical': 0.5, 'p99': 0.5})
    check('latency table: sroce vs TCP and a TCP request/response row',
          'TCP request/response 8 B' in t and '92.90' in t and '0.50x' in t)
    check('failed runs named, a bandwidth of 0.00 among them',
          run_status(os.path.join(samples, 'raw')) ==
          (11, ['rxe-m1500-r2-ib_send_bw-s64-q1', 'sroce-m1500-r4-ib_send_bw-s64-q1']))
    print(f'1..{n}')
    return 1 if fails else 0


def main(argv):
    if len(argv) == 2 and argv[0] == '--self-test':
        return self_test(argv[1])
    png = True
    if argv and argv[0] == '--no-png':
        png = False
        argv = argv[1:]
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    return report(argv[0], png)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
