# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# sroce — top-level build.
#
#   make               build the module (kernel/sroce.ko) and the provider
#                      (build/provider/libsroce-rdmav34.so + sroce.driver)
#   make check         every test: host unit tests, then the VM suite
#   make demo          boot a VM, create devices, show them (README)
#   make bench         sroce vs rdma_rxe, TCP and memcpy in one VM: table,
#                      build/bench/results.csv, bench.png (BENCH_ARGS=--quick)
#   make fuzz-parse    libFuzzer target over the packet parser (clang):
#                      build/fuzz/sroce_parse_fuzz (tests/fuzz)
#   make install       module -> /lib/modules/$(KVER)/updates, provider ->
#                      libibverbs' provider dir, driver file -> /etc/libibverbs.d
#   make deb           Debian packages (debian/, dpkg-buildpackage) versioned
#                      from git: build/deb/sroce-dkms_<v>_all.deb (DKMS) and
#                      libsroce1_<v>_amd64.deb (provider, sroce(7)); tools/deb
#   make check-matrix  the support matrix (tools/matrix/check): each kernel
#                      (6.1, 6.12, trixie, newest) booted once with its
#                      rdma-core (44, 44, 56.1, 65), the smoke suite
#                      tests/matrix/smoke.sh; MATRIX='trixie newest' for some
#
# KDIR selects the kernel to build against (default: Debian's 6.12 headers).
#
# The debug test kernel (KASAN, lockdep, kmemleak, KUnit; tools/debug-kernel):
#   make debug-kernel  build it (once; long) into build/debug-kernel/
#   make debug-modules sroce.ko + sroce_ktest.ko against it, in a copy of the
#                      sources (build/debug-kernel/sroce), staged for the VM
#   make debug-vm CMD='...'   boot it, run CMD (bash) in the guest
#   make check-debug   the VM suite on it
#   make DEBUG_KERNEL=1 module|ktest|stage|install-module   (or KVER=<its
#                      release>): any module target against it
#   DEBUG_NEWEST=1     any of these with the debug kernel made from the
#                      matrix's newest kernel (7.2; build/debug-kernel-newest)

# DEBUG_NEWEST=1: the debug kernel made from the newest kernel of the
# support matrix (tools/debug-kernel --newest), whose modules build with
# its own compiler in tools/matrix/testroot sid (KRUN).
ifeq ($(DEBUG_NEWEST),1)
DK	:= $(CURDIR)/build/debug-kernel-newest
export SROCE_DEBUG_KERNEL := $(DK)
DEBUG_KERNEL := 1
KRUN	:= $(CURDIR)/tools/matrix/testroot --run sid --bind $(CURDIR) --
else
DK	:= $(CURDIR)/build/debug-kernel
KRUN	:=
endif
ifeq ($(DEBUG_KERNEL),1)
KVER	?= $(shell cat $(DK)/krel 2>/dev/null)
endif
KVER	?= 6.12.113+deb12-amd64
ifneq ($(filter %-sroce-debug,$(KVER)),)
DEBUG_KERNEL := 1
endif
ifeq ($(DEBUG_KERNEL),1)
# The module is built in a copy of its sources: kernel/sroce.ko stays the
# one for Debian's kernel.
KDIR	?= $(DK)/src
MSRC	:= $(DK)/sroce
else ifneq ($(wildcard $(CURDIR)/build/matrix/$(KVER)/kernel.env),)
# A kernel of the support matrix: tools/matrix/build built sroce for it
# (in a copy of its sources, against the headers it fetched).
KDIR	?= $(shell sed -n 's/^KDIR=//p' $(CURDIR)/build/matrix/$(KVER)/kernel.env)
MSRC	:= $(CURDIR)/build/matrix/$(KVER)/sroce
else
MSRC	:= $(CURDIR)
endif
KDIR	?= /lib/modules/$(KVER)/build
W	?= 1
BUILD	:= $(CURDIR)/build
DESTDIR	?=

.PHONY: all module provider tools ktest install install-module install-provider \
	check check-host check-vm check-matrix demo bench bench-tool deps stage clean clean-module \
	userspace-next \
	debug-kernel debug-src debug-modules debug-vm check-debug soak clean-debug-kernel \
	fuzz-parse deb

all: module provider tools ktest

module: $(if $(filter 1,$(DEBUG_KERNEL)),debug-src)
	$(KRUN) $(MAKE) -C $(KDIR) M=$(MSRC) W=$(W) modules

provider:
	$(MAKE) -C provider BUILD_DIR=$(BUILD)/provider

# kernel/sroce_opcode.c in userspace under libFuzzer, ASan and UBSan.
FUZZ_CC	?= clang
fuzz-parse: $(BUILD)/fuzz/sroce_parse_fuzz
$(BUILD)/fuzz/sroce_parse_fuzz: tests/fuzz/sroce_parse_fuzz.c kernel/sroce_opcode.c \
		kernel/sroce_pkt.h $(wildcard tests/fuzz/include/*/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -Wall -Wextra -Werror \
		-Itests/fuzz/include -Ikernel -o $@ tests/fuzz/sroce_parse_fuzz.c \
		kernel/sroce_opcode.c

# Test-only kernel module (tests/kmod): kernel-consumer checks in the VM.
ktest: $(if $(filter 1,$(DEBUG_KERNEL)),debug-src)
	$(KRUN) $(MAKE) -C $(KDIR) M=$(MSRC)/tests/kmod W=$(W) modules

tools: provider $(BUILD)/tests/sroce_mpi
	$(MAKE) -C provider BUILD_DIR=$(BUILD)/provider tools

# sid's rdma-core (65; fetched once into build/cache by
# tools/matrix/rdma-core-root) with the provider and sroce_rc_errors built
# for it in build/provider-next (its root's path in build/provider-next/
# root): the VM suite asks through it what rdma-core 44 cannot (FLUSH).
NEXT_SUITE ?= sid
userspace-next:
	root=$$(tools/matrix/rdma-core-root $(NEXT_SUITE)) && \
	$(MAKE) -C provider LIBIBVERBS_ROOT="$$root" BUILD_DIR=$(BUILD)/provider-next \
		lib rc-errors-tool && \
	echo "$$root" >$(BUILD)/provider-next/root

# The MPI program of the middleware tests and the bench's MPI table, built
# with Open MPI's mpicc (libopenmpi-dev, from tools/deps).
$(BUILD)/tests/sroce_mpi: tests/tools/sroce_mpi.c
	@mkdir -p $(@D)
	mpicc -std=gnu11 -O2 -g -Wall -Wextra -Werror -o $@ $<

install: install-module install-provider

# kbuild runs depmod itself (DEPMOD=true skips it, for staged trees).
install-module: module
	$(MAKE) -C $(KDIR) M=$(MSRC) INSTALL_MOD_DIR=updates \
		$(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) \
		$(if $(DEPMOD),DEPMOD=$(DEPMOD)) modules_install

install-provider: provider
	$(MAKE) -C provider BUILD_DIR=$(BUILD)/provider DESTDIR=$(DESTDIR) install

deps:
	tools/deps

deb:
	tools/deb

# Module indexes for the test VM (depmod on the host; see the script).
stage: module
	tools/stage-modules $(KVER)

# Host tests first (fast, no VM), then the VM suite; one closing line.
# userspace-next may fail (no network): 34-rc-errors then says so.
check: all stage
	-$(MAKE) userspace-next
	tools/check

check-host: all
	tools/check --host-only

check-vm: all stage
	-$(MAKE) userspace-next
	tools/check --vm-only

check-matrix: all
	tools/matrix/check $(MATRIX)

demo: all stage
	tools/demo

# The benchmark of issue 7 (Documentation/performance.rst): one VM boot, a
# few minutes with BENCH_ARGS=--quick, about an hour without.
bench: module provider stage bench-tool
	tools/bench/bench $(BENCH_ARGS)

# The MPI table needs sroce_mpi: without it a fresh clone's bench has none.
bench-tool: $(BUILD)/bench/sroce_memcpy $(BUILD)/bench/sroce_crc \
	$(BUILD)/bench/sroce_pingpong $(BUILD)/bench/sroce_tcplat \
	$(BUILD)/tests/sroce_mpi

$(BUILD)/bench/sroce_%: tools/bench/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -o $@ $<

clean-module:
	$(MAKE) -C $(KDIR) M=$(MSRC) clean
	$(MAKE) -C $(KDIR) M=$(MSRC)/tests/kmod clean

# ---- the debug test kernel (Documentation/testing.rst) ----------------------

debug-kernel:
	tools/debug-kernel $(if $(filter 1,$(DEBUG_NEWEST)),--newest)

# The module's sources, copied (mtimes kept: kbuild stays incremental).
debug-src:
	@test -f $(DK)/krel || { echo "no debug kernel: make debug-kernel first" >&2; exit 1; }
	@mkdir -p $(DK)/sroce
	rsync -a -R --prune-empty-dirs --exclude='*.mod.c' --include='*/' --include='*.[ch]' \
		--include=Kbuild --exclude='*' Kbuild kernel uapi tests/kmod tests/kunit \
		$(DK)/sroce/

debug-modules: debug-kernel
	$(MAKE) DEBUG_KERNEL=1 module ktest stage

# make debug-vm CMD='tests/vm/run-all 21-qp.sh'   (VM_ARGS: more tools/vm/run
# options, e.g. VM_ARGS='-v --kmemleak')
export CMD
debug-vm: debug-modules provider tools
	@test -n "$$CMD" || { echo "usage: make debug-vm CMD='shell commands'" >&2; exit 2; }
	tools/vm/run --debug-kernel $(VM_ARGS) -c "$$CMD"

check-debug: debug-modules provider tools
	-$(MAKE) userspace-next
	tools/check --vm-only --debug-kernel

# The soak (tests/vm/soak.sh): SOAK_MINUTES (default 30) of mixed traffic
# at 1 % loss; on the debug kernel with kmemleak when it is built (make
# debug-kernel), else on Debian's. Log: build/check/soak.log.
SOAK_MINUTES ?= 30
export SOAK_MINUTES
soak: module provider tools stage
	@if test -f $(DK)/krel; then $(MAKE) --no-print-directory debug-modules; fi
	tools/soak

# The debug kernel (an hour to build) survives "make clean"; the sroce
# build against it does not.
clean: clean-module
	$(MAKE) -C provider BUILD_DIR=$(BUILD)/provider clean
	rm -rf $(DK)/sroce $(DK)/modstage
	find $(BUILD) -mindepth 1 -maxdepth 1 ! -name debug-kernel -exec rm -rf {} + 2>/dev/null || true

clean-debug-kernel:
	rm -rf $(DK)
