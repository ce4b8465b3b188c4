# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# sroce — top-level build.
#
#   make               build the module (kernel/sroce.ko) and the provider
#                      (build/provider/libsroce-rdmav34.so + sroce.driver)
#   make check         every test: host unit tests, then the VM suite
#   make demo          boot a VM, create devices, show them (README)
#   make install       module -> /lib/modules/$(KVER)/updates, provider ->
#                      libibverbs' provider dir, driver file -> /etc/libibverbs.d
#
# KDIR selects the kernel to build against (default: Debian's 6.12 headers).

KVER	?= 6.12.113+deb12-amd64
KDIR	?= /lib/modules/$(KVER)/build
W	?= 1
BUILD	:= $(CURDIR)/build
DESTDIR	?=

.PHONY: all module provider tools ktest install install-module install-provider \
	check check-host check-vm demo deps stage clean clean-module

all: module provider tools ktest

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=$(W) modules

provider:
	$(MAKE) -C provider BUILD_DIR=$(BUILD)/provider

# Test-only kernel module (tests/kmod): kernel-consumer checks in the VM.
ktest:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/kmod W=$(W) modules

tools: provider
	$(MAKE) -C provider BUILD_DIR=$(BUILD)/provider tools

install: install-module install-provider

# kbuild runs depmod itself (DEPMOD=true skips it, for staged trees).
install-module: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates \
		$(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) \
		$(if $(DEPMOD),DEPMOD=$(DEPMOD)) modules_install

install-provider: provider
	$(MAKE) -C provider BUILD_DIR=$(BUILD)/provider DESTDIR=$(DESTDIR) install

deps:
	tools/deps

# Module indexes for the test VM (depmod on the host; see the script).
stage: module
	tools/stage-modules $(KVER)

# Host tests first (fast, no VM), then the VM suite; one closing line.
check: all stage
	tools/check

check-host: all
	tools/check --host-only

check-vm: all stage
	tools/check --vm-only

demo: all stage
	tools/demo

clean-module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/kmod clean

clean: clean-module
	$(MAKE) -C provider BUILD_DIR=$(BUILD)/provider clean
	rm -rf $(BUILD)
