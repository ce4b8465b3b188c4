# shellcheck shell=bash
# tools/vm/netlib.sh: network helpers for scripts running INSIDE the test VM
# (tools/vm/run, tools/vm/run2).  Source it:   . tools/vm/netlib.sh
#
# Topologies
#   vm_netns_pair NS_A NS_B IP_A IP_B [MTU [IP6_A IP6_B]]
#       two namespaces joined by a veth pair ($VM_VETH_A in NS_A, $VM_VETH_B
#       in NS_B; default vethA/vethB).  IPs may carry a prefix (default /24);
#       IPv6 defaults to fd77:C::D/64 for a.b.C.D (10.77.0.1 -> fd77::1),
#       added with nodad.  VM_NET_STATIC_NEIGH=1 adds static neighbours.
#   vm_veth_initns_and_ns IF_INIT NS IF_NS IP_INIT IP_NS [MTU [IP6_INIT IP6_NS]]
#       one veth end in init_net, the other in namespace NS (interop topology).
#   vm_netns_bridge BR [MTU] -- NS1 IP1 [NS2 IP2 ...]
#       N namespaces on one bridge BR in init_net (veth "v-NSi" in init_net,
#       "eth0" inside each namespace).
# Building blocks
#   vm_netns_add NS...            create namespaces (lo up)
#   vm_netns_del NS...            delete them (no error if missing)
#   vm_veth_add NS1 IF1 NS2 IF2 [MTU]   veth pair; NS "" or "-" = init_net
#   vm_addr_add NS IF IP4 [IP6]   addresses (+ nodad IPv6) and link up
#   vm_neigh_add NS IF IP MAC     static neighbour (IPv4 or IPv6)
#   vm_if_mac NS IF               print the MAC of IF
#   vm_ip6_of IP4                 print the default IPv6 for an IPv4 address
# Synchronisation (e.g. between the two guests of tools/vm/run2)
#   vm_wait_tcp [-n NS] HOST PORT [TIMEOUT]   until a TCP connect succeeds
#   vm_wait_ping [-n NS] HOST [TIMEOUT]       until HOST answers a ping
#   vm_wait_listen [-n NS] PORT [TIMEOUT]     until a local TCP listener on PORT
#   vm_announce [-n NS] PORT                  background "ready" server on PORT
#                                             (PID in VM_ANNOUNCE_PID)
#   (TIMEOUT in seconds, default 60; return 1 on timeout)
#   vm_wait_tcp really connects (and closes at once): fine for iperf3 -s or
#   a vm_announce port, but it would consume the single connection of a
#   one-shot server (ib_send_bw, rping -s, iperf3 -s -1).  For those, let the
#   server side wait for its own listener (vm_wait_listen) and then
#   vm_announce another port that the client side waits for.
#
# All functions return non-zero on failure and print what failed to stderr.

VM_VETH_A=${VM_VETH_A:-vethA}
VM_VETH_B=${VM_VETH_B:-vethB}

_vm_net_err() { echo "netlib: $*" >&2; }

# Run "ip ARGS" in namespace $1 ("" or "-" = init_net).
_vm_ip() {
	local ns=$1
	shift
	if [ -z "$ns" ] || [ "$ns" = - ]; then
		ip "$@"
	else
		ip -n "$ns" "$@"
	fi
}

# Default IPv6 address for an IPv4 one: a.b.C.D[/len] -> fd77:C::D
vm_ip6_of() {
	local ip=${1%/*} c d
	IFS=. read -r _ _ c d <<<"$ip"
	[ -n "$d" ] || { _vm_net_err "not an IPv4 address: $1"; return 1; }
	echo "fd77:$c::$d"
}

vm_netns_add() {
	local ns
	for ns in "$@"; do
		ip netns add "$ns" || { _vm_net_err "cannot create netns $ns"; return 1; }
		ip -n "$ns" link set lo up || return 1
	done
}

vm_netns_del() {
	local ns
	for ns in "$@"; do
		ip netns del "$ns" 2>/dev/null || true
	done
}

# vm_veth_add NS1 IF1 NS2 IF2 [MTU]: veth pair IF1<->IF2, ends moved into NS1
# and NS2 ("" or "-" keeps an end in init_net).
vm_veth_add() {
	local ns1=$1 if1=$2 ns2=$3 if2=$4 mtu=${5:-}
	local tmp1="vt$$a$RANDOM" tmp2="vt$$b$RANDOM"
	# Create with temporary names in init_net so names in the namespaces
	# (e.g. eth0 in several of them) never clash.
	ip link add "$tmp1" type veth peer name "$tmp2" || { _vm_net_err "cannot create veth $if1/$if2"; return 1; }
	if ! _vm_veth_place "$tmp1" "$ns1" "$if1" "$mtu" || ! _vm_veth_place "$tmp2" "$ns2" "$if2" "$mtu"; then
		ip link del "$tmp1" 2>/dev/null
		_vm_ip "$ns1" link del "$if1" 2>/dev/null
		return 1
	fi
}

_vm_veth_place() {
	local tmp=$1 ns=$2 name=$3 mtu=$4
	if [ -n "$ns" ] && [ "$ns" != - ]; then
		ip link set "$tmp" netns "$ns" || { _vm_net_err "cannot move $tmp to netns $ns"; return 1; }
	fi
	_vm_ip "$ns" link set "$tmp" name "$name" || { _vm_net_err "cannot rename $tmp to $name"; return 1; }
	if [ -n "$mtu" ]; then
		_vm_ip "$ns" link set "$name" mtu "$mtu" || { _vm_net_err "cannot set MTU $mtu on $name"; return 1; }
	fi
}

# vm_addr_add NS IF IP4 [IP6]: IP4 default prefix /24, IP6 default from
# vm_ip6_of with /64 ("none" = no IPv6); brings IF up.
vm_addr_add() {
	local ns=$1 dev=$2 ip4=$3 ip6=${4:-}
	[[ $ip4 == */* ]] || ip4=$ip4/24
	[ -n "$ip6" ] || ip6=$(vm_ip6_of "$ip4") || return 1
	[ "$ip6" = none ] || [[ $ip6 == */* ]] || ip6=$ip6/64
	_vm_ip "$ns" addr add "$ip4" dev "$dev" || { _vm_net_err "cannot add $ip4 to $dev"; return 1; }
	if [ "$ip6" != none ]; then
		_vm_ip "$ns" addr add "$ip6" dev "$dev" nodad || { _vm_net_err "cannot add $ip6 to $dev"; return 1; }
	fi
	_vm_ip "$ns" link set "$dev" up || { _vm_net_err "cannot bring $dev up"; return 1; }
}

vm_if_mac() {
	_vm_ip "$1" -o link show dev "$2" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'
}

vm_neigh_add() {
	local ns=$1 dev=$2 ip=${3%/*} mac=$4
	_vm_ip "$ns" neigh replace "$ip" lladdr "$mac" dev "$dev" nud permanent ||
		{ _vm_net_err "cannot add neighbour $ip on $dev"; return 1; }
}

# Shared body of vm_netns_pair and vm_veth_initns_and_ns.
_vm_link_two() {
	local ns1=$1 if1=$2 ns2=$3 if2=$4 ip1=$5 ip2=$6 mtu=${7:-} ip61=${8:-} ip62=${9:-}
	vm_veth_add "$ns1" "$if1" "$ns2" "$if2" "$mtu" || return 1
	vm_addr_add "$ns1" "$if1" "$ip1" "$ip61" || return 1
	vm_addr_add "$ns2" "$if2" "$ip2" "$ip62" || return 1
	if [ "${VM_NET_STATIC_NEIGH:-0}" = 1 ]; then
		local mac1 mac2
		mac1=$(vm_if_mac "$ns1" "$if1") && mac2=$(vm_if_mac "$ns2" "$if2") || return 1
		vm_neigh_add "$ns1" "$if1" "$ip2" "$mac2" || return 1
		vm_neigh_add "$ns2" "$if2" "$ip1" "$mac1" || return 1
		[ "$ip61" = none ] || [ "$ip62" = none ] || {
			vm_neigh_add "$ns1" "$if1" "${ip62:-$(vm_ip6_of "$ip2")}" "$mac2" &&
				vm_neigh_add "$ns2" "$if2" "${ip61:-$(vm_ip6_of "$ip1")}" "$mac1"
		} || return 1
	fi
}

# vm_netns_pair NS_A NS_B IP_A IP_B [MTU [IP6_A IP6_B]]
vm_netns_pair() {
	[ $# -ge 4 ] || { _vm_net_err "usage: vm_netns_pair NS_A NS_B IP_A IP_B [MTU [IP6_A IP6_B]]"; return 2; }
	vm_netns_add "$1" "$2" || return 1
	_vm_link_two "$1" "$VM_VETH_A" "$2" "$VM_VETH_B" "$3" "$4" "${5:-}" "${6:-}" "${7:-}"
}

# vm_veth_initns_and_ns IF_INIT NS IF_NS IP_INIT IP_NS [MTU [IP6_INIT IP6_NS]]
vm_veth_initns_and_ns() {
	[ $# -ge 5 ] || { _vm_net_err "usage: vm_veth_initns_and_ns IF_INIT NS IF_NS IP_INIT IP_NS [MTU [IP6_INIT IP6_NS]]"; return 2; }
	vm_netns_add "$2" || return 1
	_vm_link_two - "$1" "$2" "$3" "$4" "$5" "${6:-}" "${7:-}" "${8:-}"
}

# vm_netns_bridge BR [MTU] -- NS1 IP1 [NS2 IP2 ...]
vm_netns_bridge() {
	local br=$1 mtu="" ns ip
	shift
	if [ "${1:-}" != -- ]; then
		mtu=$1
		shift
	fi
	[ "${1:-}" = -- ] || { _vm_net_err "usage: vm_netns_bridge BR [MTU] -- NS1 IP1 [NS2 IP2 ...]"; return 2; }
	shift
	ip link add "$br" type bridge || { _vm_net_err "cannot create bridge $br"; return 1; }
	[ -z "$mtu" ] || ip link set "$br" mtu "$mtu" || return 1
	ip link set "$br" up || return 1
	while [ $# -ge 2 ]; do
		ns=$1 ip=$2
		shift 2
		vm_netns_add "$ns" || return 1
		vm_veth_add - "v-$ns" "$ns" eth0 "$mtu" || return 1
		ip link set "v-$ns" master "$br" up || return 1
		vm_addr_add "$ns" eth0 "$ip" || return 1
	done
}

# Parse [-n NS] for the wait helpers into _vm_ns and _vm_nsexec.
_vm_wait_ns() {
	_vm_ns="" _vm_nsexec=()
	if [ "${1:-}" = -n ]; then
		_vm_ns=$2
		_vm_nsexec=(ip netns exec "$2")
	fi
}

# vm_wait_tcp [-n NS] HOST PORT [TIMEOUT]
vm_wait_tcp() {
	_vm_wait_ns "$@"
	[ -z "$_vm_ns" ] || shift 2
	local host=$1 port=$2 timeout=${3:-60} end
	end=$((SECONDS + timeout))
	while [ "$SECONDS" -lt "$end" ]; do
		# shellcheck disable=SC2016 # expanded by the inner bash
		if "${_vm_nsexec[@]}" timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$host" "$port" 2>/dev/null; then
			return 0
		fi
		sleep 0.2
	done
	_vm_net_err "timeout (${timeout}s) waiting for TCP $host:$port${_vm_ns:+ in netns $_vm_ns}"
	return 1
}

# vm_wait_ping [-n NS] HOST [TIMEOUT]
vm_wait_ping() {
	_vm_wait_ns "$@"
	[ -z "$_vm_ns" ] || shift 2
	local host=$1 timeout=${2:-60} end
	end=$((SECONDS + timeout))
	while [ "$SECONDS" -lt "$end" ]; do
		if "${_vm_nsexec[@]}" ping -c 1 -W 1 "$host" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	_vm_net_err "timeout (${timeout}s) waiting for ping $host${_vm_ns:+ in netns $_vm_ns}"
	return 1
}

# vm_wait_listen [-n NS] PORT [TIMEOUT]: until something listens on TCP PORT
# here (without connecting to it).
vm_wait_listen() {
	_vm_wait_ns "$@"
	[ -z "$_vm_ns" ] || shift 2
	local port=$1 timeout=${2:-60} end
	end=$((SECONDS + timeout))
	while [ "$SECONDS" -lt "$end" ]; do
		[ -n "$("${_vm_nsexec[@]}" ss -Hltn "( sport = :$port )" 2>/dev/null)" ] && return 0
		sleep 0.2
	done
	_vm_net_err "timeout (${timeout}s) waiting for a TCP listener on port $port${_vm_ns:+ in netns $_vm_ns}"
	return 1
}

# vm_announce [-n NS] PORT: accept-and-close server on PORT in the background,
# for a peer's vm_wait_tcp.  Its PID is in VM_ANNOUNCE_PID (the VM powers off
# at the end anyway).
vm_announce() {
	_vm_wait_ns "$@"
	[ -z "$_vm_ns" ] || shift 2
	local port=$1
	"${_vm_nsexec[@]}" busybox nc -ll -p "$port" -e /bin/true </dev/null >/dev/null 2>&1 &
	# shellcheck disable=SC2034 # for the caller
	VM_ANNOUNCE_PID=$!
	vm_wait_listen ${_vm_ns:+-n "$_vm_ns"} "$port" 10
}
