/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce: a run-to-completion task — one of a QP's engines (requester,
 * responder transmit) that any context may ask to run.
 *
 * The first caller to find the task idle runs it right there (the post's
 * system call, the receive softirq, a timer); a caller that finds it
 * running only asks for one more pass, which the runner makes before it
 * goes idle. So the engine's state needs no lock of its own, work runs
 * where it arrives, and nothing is left behind. A pass that reports more
 * work than its budget allowed continues on the sroce workqueue instead
 * of holding the CPU.
 *
 * The function must not sleep: it may run in softirq context.
 */
#ifndef SROCE_TASK_H
#define SROCE_TASK_H

#include <linux/atomic.h>
#include <linux/workqueue.h>

enum sroce_task_state {
	SROCE_TASK_IDLE,
	SROCE_TASK_RUNNING,
	SROCE_TASK_RERUN,	/* running, and asked for another pass */
};

struct sroce_task {
	atomic_t state;
	bool stopped;		/* no new runs (the QP is going away) */
	bool defer;		/* fn: go on from the linger workqueue */
	/* One pass; returns true when it stopped on its budget. */
	bool (*fn)(struct sroce_task *task);
	struct work_struct work;
};

void sroce_task_init(struct sroce_task *task,
		     bool (*fn)(struct sroce_task *task));
void sroce_task_run(struct sroce_task *task);
void sroce_task_defer(struct sroce_task *task);
void sroce_task_schedule(struct sroce_task *task);
void sroce_task_schedule_linger(struct sroce_task *task);
void sroce_task_sync(struct sroce_task *task);
int sroce_task_cpu_take(void);
void sroce_task_cpu_give(int cpu);
bool sroce_task_cpu_busy(void);
atomic_t *sroce_task_rx_enter(void);
void sroce_task_rx_exit(atomic_t *in_rx);
void sroce_task_kick(struct sroce_task *task);
void sroce_task_work_on(int cpu, struct work_struct *work);
void sroce_task_stop(struct sroce_task *task);

int sroce_task_wq_init(void);
void sroce_task_wq_exit(void);

#endif /* SROCE_TASK_H */
