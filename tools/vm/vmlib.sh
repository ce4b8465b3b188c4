# shellcheck shell=bash
# Host-side engine shared by tools/vm/run (one guest) and tools/vm/run2 (two
# guests joined by a virtual Ethernet link).  Sourced, not executed.
#
# A front-end fills in the VM_* settings and the per-guest G_* arrays (index
# 0 = first guest, 1 = second), then calls vm_main, which:
#   1. builds (or reuses) the initramfs for the kernel (build/vm/initramfs-*),
#   2. boots every guest under QEMU with:
#        host "/"      9p read-only   + tmpfs overlay  -> guest "/"
#        repo          9p read-write (cache=mmap) at the same path
#        state dir     9p read-write  -> /run/vm (config, cmd, started, status)
#        ttyS0         kernel console -> klog file
#        hvc0          command stdout+stderr -> a file, followed to our stdout
#                      (prefixed in run2)
#   3. waits for the commands, with a hard timeout, and boots again once if a
#      guest died before its command started (rare TCG boot crashes),
#   4. scans the kernel logs for the patterns in tools/vm/klog-patterns,
#   5. returns the exit status (see vm_main).

VM_TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_TOOLS_REPO=$(git -C "$VM_TOOLS_DIR" rev-parse --show-toplevel 2>/dev/null ||
	(cd "$VM_TOOLS_DIR/../.." && pwd))

# ---- settings (front-ends override) --------------------------------------------
VM_DEFAULT_KERNEL=/boot/vmlinuz-6.12.113+deb12-amd64
VM_KERNEL=${KERNEL:-$VM_DEFAULT_KERNEL}
VM_MODDIR=${MODULES_DIR:-}          # default: /lib/modules/<kernel version>
VM_QEMU=${QEMU:-qemu-system-x86_64}
VM_ACCEL=${VM_ACCEL:-tcg}
VM_REPO=$VM_TOOLS_REPO
VM_CWD=""                            # default: $VM_REPO
VM_BUILD_DIR=${VM_BUILD_DIR:-$VM_TOOLS_REPO/build/vm}
VM_TIMEOUT=600                       # hard limit per boot attempt, seconds
VM_BOOT_TIMEOUT=180                  # command must have started by then
VM_RETRIES=1                         # extra boots if a command never started
VM_PEER_GRACE=30                     # run2: peer's time after the other failed
VM_MEM=2G
VM_APPEND=""                         # extra kernel command line
VM_KEEP=0                            # keep the state dirs
VM_VERBOSE=0                         # stream the kernel log to stderr
VM_KLOG_ALLOW=""                     # ERE of expected kernel-log lines
VM_SHARES=()                         # HOST:GUEST[:ro]
VM_ENV=()                            # NAME=VALUE for the command
VM_QEMU_EXTRA=()                     # raw extra QEMU arguments
VM_LINK=0                            # run2: socket link between guests
VM_MTU=1500
VM_NET_IF=eth1

# Per-guest arrays, filled by the front-end.
G_LABEL=()     # "" (run) or A/B (run2): used for prefixes and messages
G_HOSTNAME=()
G_CMD=()       # body of the bash script run in the guest
G_KLOG=()
G_SMP=()
G_NETIDX=()    # run2: 1 or 2 -> 10.77.0.N, fd77::N, MAC ...:0N

# Per-guest run state.
G_STATE=() G_QPID=() G_RPID=() G_TPID=() G_RC=() G_T_START=() G_T_DONE=() G_T_EXIT=()
G_STOPPED=()   # run2: stopped because the other guest had failed
VM_STATE_DIRS=()

vm_msg() { echo "vm: $*" >&2; }
vm_die() {
	echo "vm: error: $*" >&2
	exit 125
}

# Milliseconds since the epoch.
vm_now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}

# Seconds with one decimal from milliseconds.
vm_secs() { printf '%d.%d' $(($1 / 1000)) $((($1 % 1000) / 100)); }

# Single-quote a string for both bash and busybox sh.
vm_sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# Message about guest $1: "vm: ..." or "vm[A]: ...".
vm_gmsg() {
	local i=$1
	shift
	echo "vm${G_LABEL[i]:+[${G_LABEL[i]}]}: $*" >&2
}

# ---- kernel and initramfs ---------------------------------------------------------

# The debug test kernel (tools/debug-kernel, "make debug-kernel"): its
# bzImage, and its modules (build/debug-kernel/root/lib/modules/<release>),
# which the guest sees at /lib/modules/<release> (see initramfs-init).
# SROCE_DEBUG_KERNEL: another one (build/debug-kernel-newest: tools/debug-kernel
# --newest; make DEBUG_NEWEST=1 sets it).
VM_DEBUG_KERNEL_DIR=${SROCE_DEBUG_KERNEL:-$VM_TOOLS_REPO/build/debug-kernel}
vm_use_debug_kernel() {
	local d=$VM_DEBUG_KERNEL_DIR krel
	if [ ! -f "$d/bzImage" ] || [ ! -f "$d/krel" ]; then
		vm_die "no debug kernel in $d: make debug-kernel (about an hour)"
	fi
	krel=$(cat "$d/krel")
	VM_KERNEL=$d/bzImage
	VM_MODDIR=$d/root/lib/modules/$krel
	VM_ENV+=("VM_EXPECT_KVER=$krel") # tests/vm/00-vm-smoke.sh
	SROCE_DEBUG_KERNEL=$d "$VM_TOOLS_REPO/tools/debug-kernel" \
		$([[ $d == *-newest ]] && echo --newest) --check 2>/dev/null ||
		vm_msg "warning: the debug kernel is older than tools/debug-kernel{,.config}: make debug-kernel"
}

# --kernel NAME: a kernel of the support matrix (tools/matrix/kernel: 6.1,
# 6.12, trixie, newest), fetched and unpacked once into $SROCE_CACHE/kernels,
# with sroce and the test modules built for it and staged
# (tools/matrix/build; incremental), booted with its own modules.
# Anything else is a bzImage path.
vm_set_kernel() {
	local env kver vmlinuz moddir
	case $1 in
	6.1 | 6.12 | trixie | newest) ;;
	*) VM_KERNEL=$1; return 0 ;;
	esac
	env=$("$VM_TOOLS_REPO/tools/matrix/build" "$1") || vm_die "tools/matrix/build $1 failed"
	# shellcheck disable=SC2154 # set by the eval
	read -r kver vmlinuz moddir < <(eval "$env" && echo "$KVER $VMLINUZ $MODDIR")
	[ -n "$vmlinuz" ] || vm_die "tools/matrix/build $1: no kernel"
	VM_KERNEL=$vmlinuz
	VM_MODDIR=$moddir
	VM_ENV+=("VM_EXPECT_KVER=$kver") # tests/vm/00-vm-smoke.sh
}

# Kernel release string from a bzImage's setup header.
vm_kernel_version() {
	local k=$1 off s
	[ "$(dd if="$k" bs=1 skip=$((0x202)) count=4 status=none)" = "HdrS" ] ||
		vm_die "$k is not a bzImage"
	off=$(od -An -tu2 -j $((0x20E)) -N2 "$k" | tr -d ' ')
	s=$(dd if="$k" bs=1 skip=$((off + 0x200)) count=256 status=none | tr '\0' '\n')
	s=${s%%$'\n'*}
	echo "${s%% *}"
}

# Resolve module NAME and its dependencies from modules.dep into VM_MOD_ORDER
# (paths relative to the modules dir, load order).  Built-in modules and
# modules already listed are skipped.
declare -A VM_MOD_SEEN=()
VM_MOD_ORDER=()
vm_mod_resolve() {
	local moddir=$1 name=${2//-/_} re line path dep
	re=${name//_/[-_]}
	[ -n "${VM_MOD_SEEN[$name]:-}" ] && return 0
	VM_MOD_SEEN[$name]=1
	if [ -f "$moddir/modules.builtin" ] && grep -qE "(^|/)$re\.ko\$" "$moddir/modules.builtin"; then
		return 0
	fi
	line=$(grep -m1 -E "(^|/)$re\.ko(\.(xz|zst|gz))?:" "$moddir/modules.dep") ||
		vm_die "module $name not found in $moddir (neither module nor built-in)"
	path=${line%%:*}
	for dep in ${line#*:}; do
		dep=${dep##*/}
		vm_mod_resolve "$moddir" "${dep%%.ko*}"
	done
	VM_MOD_ORDER+=("$path")
}

# Build the initramfs for kernel version $1 / modules dir $2, or reuse the
# cached one when nothing it is made of has changed.  Sets VM_INITRD.
vm_build_initramfs() {
	local kver=$1 moddir=$2 busybox=/bin/busybox key stage out m ko
	[ -x "$busybox" ] || vm_die "$busybox missing: apt-get install busybox-static"
	if ldd "$busybox" >/dev/null 2>&1; then
		vm_die "$busybox is dynamically linked: apt-get install busybox-static"
	fi
	[ -f "$moddir/modules.dep" ] || vm_die "no modules.dep in $moddir"

	VM_MOD_ORDER=()
	VM_MOD_SEEN=()
	for m in virtio_pci virtio_console 9pnet_virtio 9p overlay; do
		vm_mod_resolve "$moddir" "$m"
	done

	# Cache key: format version, init script, busybox, every module file.
	key=$( {
		echo "format 1 $kver $moddir"
		cat "$VM_TOOLS_DIR/initramfs-init"
		stat -Lc '%n %s %Y' "$busybox"
		for m in "${VM_MOD_ORDER[@]}"; do stat -Lc '%n %s %Y' "$moddir/$m"; done
	} | sha256sum | cut -c1-16)
	out=$VM_BUILD_DIR/initramfs-$kver-$key.cpio
	VM_INITRD=$out
	if [ -s "$out" ]; then
		touch "$out" # in use: keeps it from being pruned below
		return 0
	fi

	vm_msg "building initramfs $out"
	mkdir -p "$VM_BUILD_DIR"
	stage=$(mktemp -d "$VM_BUILD_DIR/initramfs-stage.XXXXXX")
	mkdir -p "$stage"/{bin,dev,proc,sys,mnt/lower,mnt/upper,newroot,modules}
	cp "$busybox" "$stage/bin/busybox"
	mknod "$stage/dev/console" c 5 1
	mknod "$stage/dev/null" c 1 3
	install -m 0755 "$VM_TOOLS_DIR/initramfs-init" "$stage/init"
	: >"$stage/modules.list"
	for m in "${VM_MOD_ORDER[@]}"; do
		ko=${m##*/}
		ko=${ko%%.ko*}.ko
		case "$m" in
		*.ko.xz) xz -dc "$moddir/$m" >"$stage/modules/$ko" ;;
		*.ko.zst) zstd -qdc "$moddir/$m" >"$stage/modules/$ko" ;;
		*.ko.gz) gzip -dc "$moddir/$m" >"$stage/modules/$ko" ;;
		*) cp "$moddir/$m" "$stage/modules/$ko" ;;
		esac
		echo "$ko" >>"$stage/modules.list"
	done
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$out.tmp.$$"
	mv "$out.tmp.$$" "$out"
	rm -rf "$stage"
	# Prune images unused for a day (other kernels or module sets; a runner
	# touches the image it uses, so concurrent runs keep theirs).
	find "$VM_BUILD_DIR" -maxdepth 1 -name "initramfs-*.cpio" -mmin +1440 -delete 2>/dev/null || true
}

# ---- kernel log -------------------------------------------------------------------

# Print the lines of kernel log $1 that match tools/vm/klog-patterns and not
# the ERE $2 (may be empty).  Returns 0 when there are none.
vm_klog_bad_lines() {
	local klog=$1 allow=$2 pats
	pats=$(grep -vE '^(#|$)' "$VM_TOOLS_DIR/klog-patterns")
	[ -f "$klog" ] || return 0
	local lines
	lines=$(tr -d '\r' <"$klog" | grep -aE -e "$pats" | { if [ -n "$allow" ]; then grep -avE -e "$allow"; else cat; fi; } || true)
	[ -z "$lines" ] && return 0
	printf '%s\n' "$lines"
	return 1
}

# Up to 60 lines of kernel log $1 from its first bad line on (the crash
# report), or its last 25 lines if it has none.  Expected lines (ERE $2) are
# not "bad".
vm_klog_crash_excerpt() {
	local klog=$1 allow=${2:-} first="" bad
	if bad=$(vm_klog_bad_lines "$klog" "$allow"); then :; else
		first=$(grep -m1 -naFx -e "${bad%%$'\n'*}" "$klog" | cut -d: -f1 || true)
	fi
	if [ -n "$first" ]; then
		tail -n +"$first" "$klog" | head -n 60 || true
	else
		tail -n 25 "$klog"
	fi
}

# ---- one guest --------------------------------------------------------------------------

# Write state dir, config and command script of guest $1.
vm_prepare_guest() {
	local i=$1 st n=0 s host dst ro ip4 ip6 e
	mkdir -p "$VM_BUILD_DIR"
	st=$(mktemp -d "$VM_BUILD_DIR/run.XXXXXX")
	G_STATE[i]=$st
	VM_STATE_DIRS+=("$st")
	cp "$VM_TOOLS_DIR/guest-init" "$st/guest-init"
	{
		echo "# generated by tools/vm/vmlib.sh"
		echo "VM_REPO=$(vm_sq "$VM_REPO")"
		echo "VM_CWD=$(vm_sq "${VM_CWD:-$VM_REPO}")"
		echo "VM_HOSTNAME=$(vm_sq "${G_HOSTNAME[i]}")"
		echo "VM_TIMEOUT=$VM_TIMEOUT"
		echo "VM_MODULES_DIR=$(vm_sq "$VM_MODDIR_BIND")"
		for s in "${VM_SHARES[@]}"; do
			IFS=: read -r host dst ro <<<"$s"
			echo "VM_SHARE_$n=$(vm_sq "$dst")"
			echo "VM_SHARE_RO_$n=$([ "$ro" = ro ] && echo ,ro)"
			n=$((n + 1))
		done
		echo "VM_NSHARES=$n"
		if [ "$VM_LINK" = 1 ]; then
			ip4=10.77.0.${G_NETIDX[i]}
			ip6=fd77::${G_NETIDX[i]}
			echo "VM_NET_MAC=52:54:00:77:00:0${G_NETIDX[i]}"
			echo "VM_NET_IF=$(vm_sq "$VM_NET_IF")"
			echo "VM_NET_MTU=$VM_MTU"
			echo "VM_NET_IP4=$ip4/24"
			echo "VM_NET_IP6=$ip6/64"
			echo "VM_HOSTS=$(vm_sq "$(printf '10.77.0.1 vm-a\n10.77.0.2 vm-b\nfd77::1 vm-a6\nfd77::2 vm-b6')")"
		fi
	} >"$st/config"
	{
		echo "#!/bin/bash"
		echo "# generated by tools/vm/vmlib.sh: the guest command"
		echo "export VM=1 VM_NAME=$(vm_sq "${G_HOSTNAME[i]}") VM_REPO=$(vm_sq "$VM_REPO")"
		echo "export VM_KLOG_ALLOW=$(vm_sq "$VM_KLOG_ALLOW")"
		if [ "$VM_LINK" = 1 ]; then
			local me=${G_NETIDX[i]} peer=$((3 - G_NETIDX[i]))
			echo "export VM_ROLE=$(vm_sq "${G_LABEL[i],,}") VM_IFNAME=$(vm_sq "$VM_NET_IF") VM_MTU=$VM_MTU"
			echo "export VM_LOCAL_IP=10.77.0.$me VM_PEER_IP=10.77.0.$peer"
			echo "export VM_LOCAL_IP6=fd77::$me VM_PEER_IP6=fd77::$peer"
			echo "export VM_PEER=vm-$([ "$peer" = 1 ] && echo a || echo b)"
		fi
		for e in "${VM_ENV[@]}"; do
			[[ $e == *=* ]] || vm_die "--env wants NAME=VALUE, got '$e'"
			echo "export ${e%%=*}=$(vm_sq "${e#*=}")"
		done
		printf '%s\n' "${G_CMD[i]}"
	} >"$st/cmd"
}

# QEMU command line of guest $1 into VM_QARGS.  $2: netdev spec or "".
vm_qemu_args() {
	local i=$1 netdev=$2 st=${G_STATE[$1]} n=0 s host dst ro mac
	# tsc=reliable: TCG's TSC is the host's; under load the clocksource
	# watchdog found it off from the emulated HPET it reads late, and
	# switched to the HPET: every clock read became slow and perftest's
	# calibration (TSC against gettimeofday) failed one run in ten after
	# it, each failure a peer idle to its timeout. On 7.2 the switch's
	# live text patch once ended in an "Oops: int3" (tools/matrix/check).
	# shellcheck disable=SC2054 # commas separate QEMU sub-options
	VM_QARGS=(
		"$VM_QEMU" -name "sroce-vm${G_LABEL[i]:+-${G_LABEL[i]}}"
		-machine q35 -accel "$VM_ACCEL" -cpu max -smp "${G_SMP[i]}" -m "$VM_MEM"
		-nodefaults -no-user-config -display none -no-reboot
		-kernel "$VM_KERNEL" -initrd "$VM_INITRD"
		-append "console=ttyS0 panic=-1 rdinit=/init tsc=reliable $VM_APPEND"
		-chardev "file,id=klog,path=$st/klog.txt" -serial chardev:klog
		-device virtio-serial-pci
		-chardev "file,id=out,path=$st/out.txt" -device virtconsole,chardev=out
		-fsdev local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap
		-device virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot
		-fsdev "local,id=fsstate,path=$st,security_model=none,multidevs=remap"
		-device virtio-9p-pci,fsdev=fsstate,mount_tag=vmstate
		-fsdev "local,id=fsrepo,path=$VM_REPO,security_model=none,multidevs=remap"
		-device virtio-9p-pci,fsdev=fsrepo,mount_tag=vmrepo
	)
	for s in "${VM_SHARES[@]}"; do
		IFS=: read -r host dst ro <<<"$s"
		VM_QARGS+=(-fsdev "local,id=fsshare$n,path=$host,security_model=none,multidevs=remap${ro:+,readonly=on}"
			-device "virtio-9p-pci,fsdev=fsshare$n,mount_tag=vmshare$n")
		n=$((n + 1))
	done
	if [ -n "$netdev" ]; then
		mac=52:54:00:77:00:0${G_NETIDX[i]}
		VM_QARGS+=(-netdev "$netdev" -device "virtio-net-pci,netdev=link,mac=$mac")
	fi
	VM_QARGS+=("${VM_QEMU_EXTRA[@]}")
}

# Start guest $1 (QEMU + console reader [+ klog follower]) in the background.
# The console (virtconsole) goes to a regular file, which the reader follows
# until QEMU has exited: QEMU drops what a console's backend does not take
# at once (it throttles only other virtio-serial ports), and a pipe whose
# reader lags behind a busy host once lost a guest's TAP totals that way.
vm_start_guest() {
	local i=$1 netdev=$2 st=${G_STATE[$1]} prefix=""
	rm -f "$st/started" "$st/status" "$st/status.tmp" "$st/timedout" "$st/out.txt"
	: >"$st/out.txt"
	: >"$st/klog.txt"
	[ -n "${G_LABEL[i]}" ] && prefix="[${G_LABEL[i]}] "
	vm_qemu_args "$i" "$netdev"
	printf '%q ' "${VM_QARGS[@]}" >"$st/qemu.cmdline"
	"${VM_QARGS[@]}" </dev/null >"$st/qemu.log" 2>&1 &
	G_QPID[i]=$!
	# tail reads to the end once more after QEMU is gone, then exits.
	tail -n +1 -s 0.2 -f --pid="${G_QPID[i]}" "$st/out.txt" | sed -u "s/^/$prefix/" &
	G_RPID[i]=$!
	G_TPID[i]=""
	if [ "$VM_VERBOSE" = 1 ]; then
		tail -n +1 -F --pid="${G_QPID[i]}" "$st/klog.txt" 2>/dev/null | sed -u "s/\r//; s/^/${prefix}[klog] /" >&2 &
		G_TPID[i]=$!
	fi
	G_RC[i]=""
	G_STOPPED[i]=""
	G_T_START[i]="" G_T_DONE[i]="" G_T_EXIT[i]=""
	G_T_BOOT[i]=$(vm_now_ms)
}

vm_alive() { [ -n "${G_QPID[$1]:-}" ] && kill -0 "${G_QPID[$1]}" 2>/dev/null; }

# Stop guest $1's QEMU (if running) and collect its helper processes.
vm_stop_guest() {
	local i=$1 st=${G_STATE[$1]} n
	if vm_alive "$i"; then
		kill -TERM "${G_QPID[i]}" 2>/dev/null || true
		for n in $(seq 20); do vm_alive "$i" || break; sleep 0.1; done
		vm_alive "$i" && kill -KILL "${G_QPID[i]}" 2>/dev/null
	fi
	[ -n "${G_QPID[i]:-}" ] && { wait "${G_QPID[i]}" 2>/dev/null || true; }
	G_QPID[i]=""
	# The reader (tail --pid) finishes the file within 0.2 s of QEMU's exit.
	if [ -n "${G_RPID[i]:-}" ]; then
		for n in $(seq 30); do kill -0 "${G_RPID[i]}" 2>/dev/null || break; sleep 0.1; done
		kill "${G_RPID[i]}" 2>/dev/null || true
		wait "${G_RPID[i]}" 2>/dev/null || true
		G_RPID[i]=""
	fi
	if [ -n "${G_TPID[i]:-}" ]; then
		sleep 0.3
		kill "${G_TPID[i]}" 2>/dev/null || true
		wait "${G_TPID[i]}" 2>/dev/null || true
		G_TPID[i]=""
	fi
}

vm_cleanup() {
	local i
	for i in "${!G_LABEL[@]}"; do vm_stop_guest "$i" 2>/dev/null || true; done
	if [ "$VM_KEEP" = 0 ]; then
		for i in "${VM_STATE_DIRS[@]}"; do rm -rf "$i"; done
	fi
}

# The link: QEMU's stream netdev over a Unix socket in the first guest's
# state dir (each frame a length and the bytes, in order, none lost). Not
# TCP: QEMU leaves Nagle on for its TCP links, and a guest that sends two
# frames in a row (an RC ACK, then the reply) had the second held for the
# first's delayed TCP ACK: about 22 ms per round trip of RC, against 0.4
# ms for UD, in every RC latency test between the guests (rdma_rxe's too).
vm_link_netdev() { # server|client
	echo "stream,id=link,server=$([ "$1" = server ] && echo on || echo off),addr.type=unix,addr.path=$VM_LINK_SOCK"
}

# Start all guests; with VM_LINK the first listens and the second connects.
vm_start_all() {
	local i n
	if [ "$VM_LINK" = 1 ]; then
		VM_LINK_SOCK=${G_STATE[0]}/link.sock
		vm_start_guest 0 "$(vm_link_netdev server)"
		for n in $(seq 100); do
			[ -S "$VM_LINK_SOCK" ] && break
			vm_alive 0 || break
			sleep 0.1
		done
		vm_start_guest 1 "$(vm_link_netdev client)"
	else
		for i in "${!G_LABEL[@]}"; do vm_start_guest "$i" ""; done
	fi
}

# Guest $1 asked (by creating /run/vm/power-cycle) to lose its power: kill
# its QEMU at once, as a power cut would, keep the kernel log of that boot,
# and boot it again with the same state dir, where /run/vm/power-cycled now
# tells its command that this is the second boot. Only the guest that
# connects the link can come back to it (the listening side's QEMU accepts
# a new connection; a connecting one does not reconnect).
vm_power_cycle() {
	local i=$1 st=${G_STATE[$1]}
	[ "$i" = "${VM_LINK_CONNECTOR:-1}" ] || {
		vm_gmsg "$i" "power cycle refused: only guest ${G_LABEL[${VM_LINK_CONNECTOR:-1}]} can rejoin the link"
		mv -f "$st/power-cycle" "$st/power-cycle-refused"
		return
	}
	vm_gmsg "$i" "power cut (the guest asked for it); booting it again"
	kill -KILL "${G_QPID[i]}" 2>/dev/null || true
	vm_stop_guest "$i"
	tr -d '\r' <"$st/klog.txt" >>"$st/klog-earlier-boots.txt"
	mv -f "$st/power-cycle" "$st/power-cycled"
	vm_start_guest "$i" "$(vm_link_netdev client)"
}

# Wait for all guests of this attempt.  Sets VM_OUTCOME to
#   done      every QEMU has exited
#   timeout   the hard timeout hit (QEMUs killed)
#   bootfail  a guest died or hung before its command started (QEMUs killed)
vm_wait_all() {
	local t0 now i all_dead failed_at=""
	t0=$(vm_now_ms)
	VM_OUTCOME=""
	while :; do
		now=$(vm_now_ms)
		all_dead=1
		for i in "${!G_LABEL[@]}"; do
			local st=${G_STATE[i]}
			if [ -z "${G_T_START[i]}" ] && [ -f "$st/started" ]; then G_T_START[i]=$now; fi
			if [ -z "${G_T_DONE[i]}" ] && [ -f "$st/status" ]; then G_T_DONE[i]=$now; fi
			if [ -f "$st/power-cycle" ] && vm_alive "$i"; then
				vm_power_cycle "$i"
				continue
			fi
			if vm_alive "$i"; then
				all_dead=0
				if [ -z "${G_T_START[i]}" ] && [ $((now - ${G_T_BOOT[i]:-$t0})) -gt $((VM_BOOT_TIMEOUT * 1000)) ]; then
					vm_gmsg "$i" "command not started after ${VM_BOOT_TIMEOUT}s"
					VM_OUTCOME=bootfail
				fi
			else
				[ -z "${G_T_EXIT[i]}" ] && G_T_EXIT[i]=$now
				if [ -z "${G_T_START[i]}" ]; then
					VM_OUTCOME=bootfail
				elif [ -z "$failed_at" ] && [ "$(cat "$st/status" 2>/dev/null || echo x)" != 0 ]; then
					failed_at=$now
				fi
			fi
		done
		[ -n "$VM_OUTCOME" ] && break
		if [ "$all_dead" = 1 ]; then
			VM_OUTCOME="done"
			break
		fi
		if [ $((now - t0)) -ge $((VM_TIMEOUT * 1000)) ]; then
			VM_OUTCOME=timeout
			break
		fi
		# run2: one side failed; give the other VM_PEER_GRACE seconds.
		if [ -n "$failed_at" ] && [ $((now - failed_at)) -ge $((VM_PEER_GRACE * 1000)) ]; then
			for i in "${!G_LABEL[@]}"; do
				if vm_alive "$i"; then
					G_STOPPED[i]=1
					vm_gmsg "$i" "stopping it: the other guest failed ${VM_PEER_GRACE}s ago (--peer-grace)"
				fi
			done
			VM_OUTCOME="done"
			break
		fi
		sleep 0.2
	done
	for i in "${!G_LABEL[@]}"; do
		vm_stop_guest "$i"
		now=$(vm_now_ms)
		[ -z "${G_T_EXIT[i]}" ] && G_T_EXIT[i]=$now
		[ -z "${G_T_DONE[i]}" ] && [ -f "${G_STATE[i]}/status" ] && G_T_DONE[i]=$now
		# The kernel log (without the serial line's \r) goes to --klog; written
		# to a private file first so that concurrent runs never mix.
		if [ -f "${G_STATE[i]}/klog.txt" ]; then
			# A power-cycled guest's earlier boots first: checked alike.
			{ cat "${G_STATE[i]}/klog-earlier-boots.txt" 2>/dev/null || true; } >"${G_KLOG[i]}.tmp.$$"
			tr -d '\r' <"${G_STATE[i]}/klog.txt" >>"${G_KLOG[i]}.tmp.$$"
			mv -f "${G_KLOG[i]}.tmp.$$" "${G_KLOG[i]}"
		fi
	done
	VM_T0=$t0
}

# ---- main ---------------------------------------------------------------------------------

# Boot all guests, run their commands, report, and exit with status:
#   first failing guest's command status (A before B), else
#   3   the commands succeeded but a kernel log had bad lines,
#   124 hard timeout (QEMU killed) or guest-side timeout,
#   125 infrastructure failure (boot failed, guest died without a status).
vm_main() {
	local i attempt=1 rc=0 bad=0 lines st status
	[ -r "$VM_KERNEL" ] || vm_die "kernel $VM_KERNEL not readable"
	command -v "$VM_QEMU" >/dev/null || vm_die "$VM_QEMU not found: apt-get install qemu-system-x86"
	[ -d "$VM_REPO" ] || vm_die "repo dir $VM_REPO missing"
	VM_REPO=$(cd "$VM_REPO" && pwd -P)
	VM_KVER=$(vm_kernel_version "$VM_KERNEL")
	[ -n "$VM_MODDIR" ] || VM_MODDIR=/lib/modules/$VM_KVER
	VM_MODDIR=$(cd "$VM_MODDIR" && pwd -P) || vm_die "modules dir missing"
	# Only a non-default modules dir is bind-mounted in the guest.
	VM_MODDIR_BIND=$VM_MODDIR
	if [ "$(cd "/lib/modules/$VM_KVER" 2>/dev/null && pwd -P)" = "$VM_MODDIR" ]; then
		VM_MODDIR_BIND=""
	fi
	for i in "${VM_SHARES[@]}"; do
		[[ $i =~ ^/[^:]*:/[^:]*(:ro)?$ ]] || vm_die "--share-dir wants /HOST:/GUEST[:ro], got '$i'"
		[ -d "${i%%:*}" ] || vm_die "share dir ${i%%:*} missing"
	done
	mkdir -p "$VM_BUILD_DIR"
	vm_build_initramfs "$VM_KVER" "$VM_MODDIR"

	trap 'vm_cleanup' EXIT
	trap 'vm_msg "interrupted"; exit 130' INT TERM

	for i in "${!G_LABEL[@]}"; do
		mkdir -p "$(dirname "${G_KLOG[i]}")"
		vm_prepare_guest "$i"
	done

	while :; do
		vm_start_all
		vm_wait_all
		[ "$VM_OUTCOME" = bootfail ] || break
		for i in "${!G_LABEL[@]}"; do
			[ -n "${G_T_START[i]}" ] && continue
			vm_gmsg "$i" "guest did not start the command (attempt $attempt); kernel log tail:"
			tail -n 15 "${G_KLOG[i]}" | sed 's/^/    /' >&2
			if [ -s "${G_STATE[i]}/qemu.log" ]; then
				vm_gmsg "$i" "qemu said:"
				sed 's/^/    /' "${G_STATE[i]}/qemu.log" >&2
			fi
			cp "${G_KLOG[i]}" "${G_KLOG[i]}.bootfail" 2>/dev/null || true
		done
		[ "$attempt" -gt "$VM_RETRIES" ] && break
		attempt=$((attempt + 1))
		vm_msg "booting again (attempt $attempt)"
	done

	# Per-guest results.
	for i in "${!G_LABEL[@]}"; do
		st=${G_STATE[i]}
		status=$(cat "$st/status" 2>/dev/null || true)
		if [ "$VM_OUTCOME" = timeout ] && [ -z "$status" ]; then
			vm_gmsg "$i" "TIMEOUT: killed after ${VM_TIMEOUT}s (--timeout)"
			G_RC[i]=124
		elif [ -z "$status" ] && [ -n "${G_STOPPED[i]}" ]; then
			G_RC[i]=125
		elif [ -z "$status" ]; then
			if [ -n "${G_T_START[i]}" ]; then
				vm_gmsg "$i" "guest ended without an exit status (kernel crash? killed?); kernel log:"
				vm_klog_crash_excerpt "${G_KLOG[i]}" "$VM_KLOG_ALLOW" | sed 's/^/    /' >&2
			else
				vm_gmsg "$i" "guest failed to boot"
			fi
			G_RC[i]=125
		else
			G_RC[i]=$status
			[ "$status" = 124 ] && vm_gmsg "$i" "TIMEOUT: command still running near the ${VM_TIMEOUT}s timeout (--timeout), killed in the guest; blocked-task dump in ${G_KLOG[i]}"
		fi
		if ! lines=$(vm_klog_bad_lines "${G_KLOG[i]}" "$VM_KLOG_ALLOW"); then
			bad=1
			vm_gmsg "$i" "kernel log has $(printf '%s\n' "$lines" | wc -l) bad line(s) (full log: ${G_KLOG[i]}):"
			printf '%s\n' "$lines" | head -n 40 | sed 's/^/    /' >&2 || true
			if [ -n "$status" ] && [ "$VM_OUTCOME" != timeout ]; then
				vm_gmsg "$i" "first report:"
				vm_klog_crash_excerpt "${G_KLOG[i]}" "$VM_KLOG_ALLOW" | head -n 30 | sed 's/^/    /' >&2 || true
			fi
		fi
		if [ -n "${G_T_START[i]}" ]; then
			local boot=$((G_T_START[i] - VM_T0)) cmd shut
			cmd=$(( ${G_T_DONE[i]:-${G_T_EXIT[i]}} - G_T_START[i] ))
			shut=$(( G_T_EXIT[i] - ${G_T_DONE[i]:-${G_T_EXIT[i]}} ))
			vm_gmsg "$i" "boot $(vm_secs "$boot")s, command $(vm_secs "$cmd")s, shutdown $(vm_secs "$shut")s, attempt $attempt, exit ${G_RC[i]}"
		fi
	done
	if [ "$VM_OUTCOME" = timeout ]; then
		rc=124
	else
		# The first failure, not counting a guest stopped because of it.
		for i in "${!G_LABEL[@]}"; do
			if [ "${G_RC[i]}" != 0 ] && [ -z "${G_STOPPED[i]}" ]; then
				rc=${G_RC[i]}
				break
			fi
		done
	fi
	if [ "$rc" = 0 ] && [ "$bad" = 1 ]; then
		vm_msg "commands succeeded but the kernel log has errors: exit 3"
		rc=3
	fi
	exit "$rc"
}
