#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The benchmark's report (tools/bench/report.py, "make bench") parses
# captured perftest, iperf3 and memcpy outputs and raw run files
# (tests/host/bench-samples) into the right figures, medians and ratios.
# No VM, no timing: the benchmark itself never passes or fails.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
exec /usr/bin/python3 "$repo/tools/bench/report.py" --self-test "$repo/tests/host/bench-samples"
