#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# sroce builds W=1-clean against Debian 12's stock kernel, 6.1 (the
# kernel most Debian 12 users run), on every "make check": its headers are
# one download and no other suite's root is needed. The other kernels of
# the matrix: tests/matrix/kernels.sh (make check-matrix).
SROCE_KERNELS=6.1 exec "$(dirname "$0")/../matrix/kernels.sh"
