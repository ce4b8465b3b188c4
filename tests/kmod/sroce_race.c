// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_race: widen one of sroce's race windows, for the tests that prove
 * a lifetime or locking rule (tests/vm/50-races.sh, tests/tools/sroce_race).
 *
 * A race the kernel must win every time is one a test cannot hit on
 * demand: the window between two instructions is a few nanoseconds wide.
 * This module puts a kprobe where the window is and spins there
 * (mdelay(), the context may be atomic) for delay_ms, once per arming,
 * while the test drives the other side of the race from another CPU. The
 * module changes nothing else; it holds no reference on sroce, so it must
 * be removed before sroce is.
 *
 *   insmod sroce_race.ko scenario=NAME [delay_ms=N]
 *   echo N > /sys/module/sroce_race/parameters/armed   (delays to make)
 *   cat /sys/module/sroce_race/parameters/hits         (delays begun)
 *   cat /sys/module/sroce_race/parameters/cpu          (where the last spins)
 *
 * Scenarios (each names the window it widens):
 *   lookup      a packet's QP lookup (sroce_qp_get) after it loaded the
 *               QP's table entry, before it took its reference: destroy
 *               may run to completion in between
 *   publish     create_qp after the QP's number is published (at its
 *               first sroce_queue_map_user), then the receive path while
 *               it holds a reference to that QP (at sroce_resp_rcv, three
 *               times as long): a create that fails meanwhile must not
 *               free the QP under the packet
 *   cq_flag     sroce_cq_post about to set a full CQ's error flag (the
 *               "lock or" of SROCE_RING_F_ERROR into the ring header): a
 *               resize may swap and free the ring in between
 *   qp_error    a responder about to move its QP to ERR (sroce_qp_error)
 *               after a request failed: another CPU may take the next
 *               packet of the same message meanwhile
 *   odp_atomic  a responder whose atomic found its ODP page missing
 *               (sroce_odp_ensure returning -EAGAIN, having queued the
 *               fault): the fault completes on another CPU meanwhile, so
 *               the page is there when the responder looks again
 *   odp_write   an ODP fault in progress (sroce_odp_fault_work) held,
 *               then a responder's copy into that MR that missed the page
 *               (sroce_mr_copy_skb returning -EAGAIN), three times as
 *               long: the held fault completes meanwhile
 */

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/string.h>

static char *scenario = "";
module_param(scenario, charp, 0444);
MODULE_PARM_DESC(scenario,
		 "lookup, publish, cq_flag, qp_error, odp_atomic or odp_write");

static unsigned int delay_ms = 300;
module_param(delay_ms, uint, 0644);
MODULE_PARM_DESC(delay_ms, "how long each delay spins (default 300)");

static atomic_t armed = ATOMIC_INIT(0);
static atomic_t hits = ATOMIC_INIT(0);
static atomic_t cpu = ATOMIC_INIT(-1);

static int race_set_atomic(const char *val, const struct kernel_param *kp)
{
	int n, err = kstrtoint(val, 0, &n);

	if (err)
		return err;
	atomic_set(kp->arg, n);
	return 0;
}

static int race_get_atomic(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(kp->arg));
}

static const struct kernel_param_ops race_atomic_ops = {
	.set = race_set_atomic,
	.get = race_get_atomic,
};

module_param_cb(armed, &race_atomic_ops, &armed, 0644);
MODULE_PARM_DESC(armed, "delays still to make (write to arm)");
module_param_cb(hits, &race_atomic_ops, &hits, 0444);
MODULE_PARM_DESC(hits, "delays begun so far");
module_param_cb(cpu, &race_atomic_ops, &cpu, 0444);
MODULE_PARM_DESC(cpu, "the CPU the last delay spins on (-1: none yet)");

/*
 * One delay of @mult * delay_ms if armed, and (@stage >= 0) if exactly
 * @stage delays came before it: the window is open while it spins.
 */
static void race_delay(int stage, unsigned int mult)
{
	if (stage >= 0 && atomic_read(&hits) != stage)
		return;
	if (atomic_add_unless(&armed, -1, 0)) {
		atomic_set(&cpu, raw_smp_processor_id());
		atomic_inc(&hits);
		mdelay(delay_ms * mult);
	}
}

/* The start and size of a function of sroce, found through kallsyms. */
static int race_func(const char *name, unsigned long *start,
		     unsigned long *size)
{
	struct kprobe kp = { .symbol_name = name };
	char buf[KSYM_SYMBOL_LEN], *size_str, *end;
	int err;

	/* kprobes resolve module symbols; the address is all we keep. */
	err = register_kprobe(&kp);
	if (err)
		return err;
	*start = (unsigned long)kp.addr;
	unregister_kprobe(&kp);
	/* "name+0x0/0xSIZE [sroce]" */
	sprint_symbol(buf, *start);
	size_str = strchr(buf, '/');
	if (!size_str)
		return -EINVAL;
	end = strchr(size_str, ' ');
	if (end)
		*end = 0;
	return kstrtoul(size_str + 1, 16, size);
}

/* lookup ----------------------------------------------------------- */

static unsigned long qp_get_start, qp_get_size;

/* xa_load() returning into sroce_qp_get(): the entry is loaded. */
static int race_xa_load_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long ret = get_kretprobe_retaddr(ri);

	if (ret - qp_get_start < qp_get_size)
		race_delay(-1, 1);
	return 0;
}

static struct kretprobe race_xa_load = {
	.kp.symbol_name = "xa_load",
	.handler = race_xa_load_ret,
	.maxactive = 64,
};

/* odp_atomic, odp_write: a delay where a function returns -EAGAIN ------ */

static int race_eagain_stage;
static unsigned int race_eagain_mult = 1;

static int race_eagain_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if ((int)regs_return_value(regs) == -EAGAIN)
		race_delay(race_eagain_stage, race_eagain_mult);
	return 0;
}

static struct kretprobe race_eagain = {
	.handler = race_eagain_ret,
	.maxactive = 64,
};

/* publish, qp_error, cq_flag: a plain delay at a probe ----------------- */

struct race_probe {
	struct kprobe kp;
	int stage;			/* see race_delay() */
	unsigned int mult;
};

static int race_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct race_probe *rp = container_of(kp, struct race_probe, kp);

	race_delay(rp->stage, rp->mult);
	return 0;
}

static struct race_probe race_probes[2];
static unsigned int race_nprobes;

static int race_probe_at(const char *symbol, unsigned long addr, int stage,
			 unsigned int mult)
{
	struct race_probe *rp = &race_probes[race_nprobes];
	struct kprobe *kp = &rp->kp;
	int err;

	memset(rp, 0, sizeof(*rp));
	rp->stage = stage;
	rp->mult = mult;
	if (symbol)
		kp->symbol_name = symbol;
	else
		kp->addr = (kprobe_opcode_t *)addr;
	kp->pre_handler = race_pre;
	err = register_kprobe(kp);
	if (err)
		pr_err("sroce_race: kprobe at %s: %d\n", symbol ?: "address",
		       err);
	else
		race_nprobes++;
	return err;
}

/*
 * The "lock orl $SROCE_RING_F_ERROR, offsetof(flags)(%reg)" in
 * sroce_cq_post(): F0, a REX prefix when the register is r8-r15, 83 /1
 * with a 32-bit displacement (mod 10), a SIB byte when the base is rsp or
 * r12 (r/m 100), displacement 0x80, immediate 0x02. Which register the
 * compiler picks differs between builds (r12 under KASAN: F0 41 83 8C 24).
 */
static unsigned long race_find_cq_flag(void)
{
	unsigned long start, size, i;
	const u8 *p;

	if (race_func("sroce_cq_post", &start, &size))
		return 0;
	p = (const u8 *)start;
	for (i = 0; i + 10 <= size; i++) {
		const u8 *q = p + i + 1;

		if (p[i] != 0xf0)
			continue;
		if ((*q & 0xf0) == 0x40)	/* REX */
			q++;
		if (q[0] != 0x83 || (q[1] & 0xf8) != 0x88)
			continue;
		q += 2;
		if ((q[-1] & 7) == 4)		/* SIB */
			q++;
		if (q + 5 > p + size)
			continue;
		if (q[0] == 0x80 && !q[1] && !q[2] && !q[3] && q[4] == 0x02)
			return start + i;
	}
	return 0;
}

static int __init sroce_race_init(void)
{
	unsigned long addr;
	int err;

	if (!strcmp(scenario, "lookup")) {
		err = race_func("sroce_qp_get", &qp_get_start, &qp_get_size);
		if (!err)
			err = register_kretprobe(&race_xa_load);
		if (err)
			return err;
	} else if (!strcmp(scenario, "publish")) {
		/* The creator first; then the packet, holding on longer. */
		err = race_probe_at("sroce_queue_map_user", 0, 0, 1);
		if (!err)
			err = race_probe_at("sroce_resp_rcv", 0, 1, 3);
	} else if (!strcmp(scenario, "cq_flag")) {
		addr = race_find_cq_flag();
		err = addr ? race_probe_at(NULL, addr, -1, 1) : -ENOENT;
	} else if (!strcmp(scenario, "qp_error")) {
		err = race_probe_at("sroce_qp_error", 0, -1, 1);
	} else if (!strcmp(scenario, "odp_atomic")) {
		race_eagain.kp.symbol_name = "sroce_odp_ensure";
		race_eagain_stage = -1;
		err = register_kretprobe(&race_eagain);
		if (err)
			return err;
	} else if (!strcmp(scenario, "odp_write")) {
		/* The fault first; then the copy, holding on longer. */
		err = race_probe_at("sroce_odp_fault_work", 0, 0, 1);
		if (err)
			return err;
		race_eagain.kp.symbol_name = "sroce_mr_copy_skb";
		race_eagain_stage = 1;
		race_eagain_mult = 3;
		err = register_kretprobe(&race_eagain);
		if (err) {
			unregister_kprobe(&race_probes[--race_nprobes].kp);
			return err;
		}
	} else {
		return -EINVAL;
	}
	if (err) {
		while (race_nprobes)
			unregister_kprobe(&race_probes[--race_nprobes].kp);
		return err;
	}
	pr_info("sroce_race: scenario %s, %u ms per delay\n", scenario,
		delay_ms);
	return 0;
}

static void __exit sroce_race_exit(void)
{
	if (!strcmp(scenario, "lookup"))
		unregister_kretprobe(&race_xa_load);
	if (!strncmp(scenario, "odp_", 4))
		unregister_kretprobe(&race_eagain);
	while (race_nprobes)
		unregister_kprobe(&race_probes[--race_nprobes].kp);
}

module_init(sroce_race_init);
module_exit(sroce_race_exit);
MODULE_DESCRIPTION("sroce race-window widener (tests only)");
MODULE_LICENSE("Dual BSD/GPL");
