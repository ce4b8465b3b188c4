# shellcheck shell=bash
# tests/vm/lib.sh: TAP helpers for kselftest-style test scripts that run
# inside the test VM (tools/vm/run -- tests/vm/run-all).  Source it:
#
#   . "$(dirname "$0")/lib.sh"
#   tap_plan 3
#   tap_check "module loads" modprobe rdma_rxe
#   tap_eq "one device" "$(ls /sys/class/infiniband | wc -l)" 1
#   tap_expect_fail "bad argument rejected" rdma link add x type rxe netdev nope
#   tap_done
#
# Functions
#   tap_plan N                  print the plan (once, before the points)
#   ok DESC                     record a passing point
#   not_ok DESC [DIAG...]       record a failing point, DIAG lines as "# ..."
#   tap_check DESC CMD...       run CMD; ok if it exits 0, else not ok with
#                               its output and exit status as diagnostics
#   tap_expect_fail DESC CMD... ok only if CMD fails (exits non-zero)
#   tap_eq DESC ACTUAL EXPECTED ok if the two strings are equal
#   tap_skip DESC REASON        skipped point ("ok N - DESC # SKIP REASON")
#   tap_skip_all REASON         skip the whole script ("1..0 # SKIP"), exit 4
#   tap_diag MSG...             diagnostic line(s) "# MSG"
#   tap_bail MSG                "Bail out! MSG", exit 1
#   tap_done                    totals; exit 1 if any point failed or the
#                               plan was not met, else 0
# Variables
#   TAP_VERBOSE=1               also show the output of passing tap_check
#   REPO                        the repo's top directory (set here)
#
# Commands given to tap_check/tap_expect_fail run in the current shell (shell
# functions work, e.g. from tools/vm/netlib.sh), stdout+stderr captured.
# The check functions also return the outcome (tap_check: the command's
# status), so a script can skip dependent steps; do not run test scripts under
# "set -e", a failing check would end the script early.

REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export REPO

TAP_N=0
TAP_PASS=0
TAP_FAIL=0
TAP_SKIP=0
TAP_PLAN=""
TAP_OUT=$(mktemp "${TMPDIR:-/tmp}/tap.XXXXXX")

tap_plan() {
	[ -z "$TAP_PLAN" ] || { tap_diag "tap_plan called twice"; return 1; }
	TAP_PLAN=$1
	echo "TAP version 13"
	echo "1..$1"
}

tap_diag() {
	local line
	for line in "$@"; do
		printf '%s\n' "$line" | sed 's/^/# /'
	done
}

ok() {
	TAP_N=$((TAP_N + 1))
	TAP_PASS=$((TAP_PASS + 1))
	echo "ok $TAP_N - $1"
}

not_ok() {
	TAP_N=$((TAP_N + 1))
	TAP_FAIL=$((TAP_FAIL + 1))
	echo "not ok $TAP_N - $1"
	shift
	[ $# -eq 0 ] || tap_diag "$@"
}

tap_skip() {
	TAP_N=$((TAP_N + 1))
	TAP_SKIP=$((TAP_SKIP + 1))
	echo "ok $TAP_N - $1 # SKIP ${2:-}"
}

# Print the captured output of the last command as diagnostics.
_tap_show_output() {
	[ -s "$TAP_OUT" ] && sed 's/^/# /' "$TAP_OUT"
	return 0
}

# A point that takes longer than TAP_SLOW seconds says so (CI keeps the
# logs: where a script's time went is found there, not by a rerun).
TAP_SLOW=${TAP_SLOW:-30}

tap_check() {
	local desc=$1 rc=0 t0=$SECONDS
	shift
	"$@" >"$TAP_OUT" 2>&1 </dev/null || rc=$?
	[ $((SECONDS - t0)) -le "$TAP_SLOW" ] ||
		tap_diag "slow: $((SECONDS - t0)) s for: $desc"
	if [ "$rc" -eq 0 ]; then
		ok "$desc"
		[ "${TAP_VERBOSE:-0}" != 1 ] || _tap_show_output
	else
		not_ok "$desc"
		tap_diag "command: $*" "exit status: $rc"
		_tap_show_output
		! declare -F tap_fail_hook >/dev/null || tap_fail_hook
	fi
	return "$rc"
}

tap_expect_fail() {
	local desc=$1 rc=0
	shift
	"$@" >"$TAP_OUT" 2>&1 </dev/null || rc=$?
	if [ "$rc" -ne 0 ]; then
		ok "$desc"
		[ "${TAP_VERBOSE:-0}" != 1 ] || { tap_diag "exit status: $rc (expected failure)"; _tap_show_output; }
		return 0
	fi
	not_ok "$desc" "command: $*" "exit status: 0, expected failure"
	_tap_show_output
	return 1
}

tap_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
		return 0
	fi
	not_ok "$1" "actual:   '$2'" "expected: '$3'"
	return 1
}

tap_skip_all() {
	echo "TAP version 13"
	echo "1..0 # SKIP $*"
	exit 4
}

tap_bail() {
	echo "Bail out! $*"
	exit 1
}

tap_done() {
	local rc=0
	if [ -z "$TAP_PLAN" ]; then
		echo "1..$TAP_N"
	elif [ "$TAP_N" -ne "$TAP_PLAN" ]; then
		tap_diag "planned $TAP_PLAN test(s) but ran $TAP_N"
		rc=1
	fi
	tap_diag "Totals: pass:$TAP_PASS fail:$TAP_FAIL xfail:0 xpass:0 skip:$TAP_SKIP error:0"
	[ "$TAP_FAIL" -eq 0 ] || rc=1
	rm -f "$TAP_OUT"
	exit "$rc"
}
