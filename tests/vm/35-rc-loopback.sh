#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC between queue pairs of one device (sroce0 to itself): such packets go
# to the receive path directly, not through the netdev (whose counters
# must not move) nor through the loopback device. (Two sroce devices of
# one namespace cannot be connected: ib_core's address resolution of a
# local destination on another netdev times out, for rdma_rxe too.)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

BIN=$SROCE_BIN/sroce_integrity

pingpong() { # DEV_S GID_S DEV_C GID_C SIZE
	sroce_pair nsA nsA 18515 \
		ibv_rc_pingpong -d "$1" -g "$2" -s "$5" -n 20 -c -- \
		ibv_rc_pingpong -d "$3" -g "$4" -s "$5" -n 20 -c 127.0.0.1 &&
	grep -Eq "^$((40 * $5)) bytes in" "$SROCE_PAIR_DIR/client"
}

integrity() { # DEV_S GID_S DEV_C GID_C
	sroce_pair nsA nsA 18525 \
		"$BIN" -s -d "$1" -g "$2" -w 60 -- \
		"$BIN" -c 127.0.0.1 -d "$3" -g "$4" -w 60 --quick &&
	tail -n 1 "$SROCE_PAIR_DIR/client" &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/client"
}

veth_tx() { ip netns exec nsA cat "/sys/class/net/$1/statistics/tx_packets"; }

tap_plan 5
vm_netns_add nsA &&
ip -n nsA link add vethA type veth peer name vethB &&
vm_addr_add nsA vethA 10.77.0.1/24 &&
vm_addr_add nsA vethB 10.77.0.2/24 &&
sroce_load &&
ip netns exec nsA rdma link add sroce0 type sroce netdev vethA &&
GA=$(sroce_wait_gid sroce0 "$(sroce_ipv4_gid 10.77.0.1)") ||
	tap_bail "set-up: sroce0 in nsA"

txa=$(veth_tx vethA)
txb=$(veth_tx vethB)
tap_check "sroce0 to itself: ibv_rc_pingpong 4 KiB" pingpong sroce0 "$GA" sroce0 "$GA" 4096
tap_check "sroce0 to itself: ibv_rc_pingpong 1 MiB" pingpong sroce0 "$GA" sroce0 "$GA" 1048576
tap_check "sroce0 to itself: sroce_integrity" integrity sroce0 "$GA" sroce0 "$GA"
# Neighbour discovery may send a packet or two; RDMA would send thousands.
tap_check "the netdevs carried none of it" bash -c \
	"echo \"vethA $txa to $(veth_tx vethA), vethB $txb to $(veth_tx vethB)\";
	 (( $(veth_tx vethA) - $txa < 20 && $(veth_tx vethB) - $txb < 20 ))"
tap_check "the devices counted it" sroce_counters_nonzero sroce0 tx_packets rx_packets
tap_done
