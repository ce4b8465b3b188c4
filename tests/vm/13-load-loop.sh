#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Load and unload sroce 16 times (8 on the debug kernel, where kmemleak
# finds a leak of one cycle and a cycle takes half a minute), creating
# devices in two namespaces each time and leaving them for rmmod to
# remove: no device, socket or netdev reference may survive, and nothing
# may grow without bound.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

if sroce_debug_kernel; then
	LOOPS=${LOOPS:-8}
else
	LOOPS=${LOOPS:-16}
fi
tap_plan 6

vm_netns_pair nsA nsB 10.77.0.1 10.77.0.2 1500
sroce_install

# Active objects in kmalloc-1k..4k.  SLUB counts every object of a CPU's
# current slab as active, so the raw figure moves by a slab's worth (8 to 32
# objects) with no leak at all; shrinking first flushes the CPU slabs.  The
# reader must then allocate nothing from these caches before it reads: a
# fresh awk's first read of /proc/slabinfo allocates its 4 KiB seq_file
# buffer, loads a CPU slab of kmalloc-4k and counts it whole (+8 at random;
# a CI run failed on it).  So one process opens everything and reads /proc/slabinfo
# once first (the buffer is kept), shrinks, seeks back and reads again: exact
# to two objects.  Another task's kmalloc or kfree between the shrink and the
# read (a free into a full slab parks it on a CPU) still adds a slab, only
# ever upwards: the least of three readings counts.  RCU-deferred frees are
# given a moment first.
slab_caches="kmalloc-1k kmalloc-2k kmalloc-4k"
slab_objs() {
	sleep 1
	python3 -c '
import sys, time
caches = sys.argv[1:]
shrink = [open("/sys/kernel/slab/%s/shrink" % c, "w") for c in caches]
info = open("/proc/slabinfo")
info.read()
counts = []
for _ in range(3):
    for f in shrink:
        f.write("1")
        f.flush()
    info.seek(0)
    objs = {l.split()[0]: int(l.split()[1]) for l in info.read().splitlines()[2:]}
    counts.append(sum(objs[c] for c in caches))
    time.sleep(0.5)
print(min(counts))
' $slab_caches 2>/dev/null ||
		awk -v caches=" $slab_caches " 'index(caches, " " $1 " ") {n += $2} END {print n}' /proc/slabinfo
}
# A leak of one such object per cycle must show (noise is a few objects); without the shrink knob the
# count is only good to a slab's worth per CPU.
if [[ -w /sys/kernel/slab/kmalloc-1k/shrink ]]; then
	slack=$(((LOOPS - 2) / 2))
else
	slack=64
fi

fails=0
log=$(mktemp)
for ((i = 0; i < LOOPS; i++)); do
	{
		modprobe sroce &&
		ip netns exec nsA rdma link add "sroce$((2 * i))" type sroce netdev vethA &&
		ip netns exec nsB rdma link add "sroce$((2 * i + 1))" type sroce netdev vethB &&
		ibv_devinfo -d "sroce$((2 * i))" >/dev/null &&
		[[ $(sroce_devices | wc -l) -eq 2 ]] &&
		rmmod sroce &&
		[[ $(sroce_devices | wc -l) -eq 0 ]]
	} >>"$log" 2>&1 || { fails=$((fails + 1)); echo "loop $i failed" >>"$log"; rmmod sroce 2>/dev/null; }
	if [[ $i -eq 1 ]]; then
		base=$(slab_objs)
		sroce_kmemleak_on && sroce_kmemleak_clear
	fi
done
end=$(slab_objs)
tap_eq "$LOOPS load/create/rmmod cycles succeeded" "$fails" 0 || cat "$log" | sed 's/^/# /'
tap_check "module gone" bash -c '! lsmod | grep -q "^sroce "'
tap_check "no UDP 4791 socket left in nsA or nsB" \
	bash -c '! ip netns exec nsA ss -Hul | grep -q :4791 && ! ip netns exec nsB ss -Hul | grep -q :4791'
tap_check "vethA can still be deleted (no netdev reference leaked)" \
	timeout 20 ip netns exec nsA ip link del vethA
tap_check "no 'waiting for ... to become free' in the kernel log" \
	bash -c '! dmesg | grep -q "waiting for .* to become free"'
if sroce_debug_kernel && sroce_kmemleak_on; then
	# KASAN's quarantine holds freed objects: slab counts do not fall
	# back there, and kmemleak is the leak check.
	tap_check "kmemleak: nothing leaked after warm-up ($base -> $end kmalloc-1k..4k objects)" \
		sroce_kmemleak_none
else
	tap_check "kmalloc-1k..4k objects grew by less than $slack after warm-up ($base -> $end)" \
		test $((end - base)) -lt "$slack"
fi
rm -f "$log"
tap_done
