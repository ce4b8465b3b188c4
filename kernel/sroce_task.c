// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: run-to-completion tasks (see sroce_task.h).
 *
 * task->state is the only synchronisation: IDLE -> RUNNING by the caller
 * that will run it, RUNNING -> RERUN by callers that find it busy, and
 * the runner leaves only through RUNNING -> IDLE, so a request for a pass
 * is never lost between the runner's last check and its exit.
 */

#include <linux/cpumask.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>

#include "sroce_compat.h"
#include "sroce_task.h"

#define SROCE_TASK_MAX_PASSES	16

static struct workqueue_struct *sroce_wq;
/* Unbound: for handed-off passes when no CPU beside the caller is free. */
static struct workqueue_struct *sroce_linger_wq;
/* Passes running in sroce's workers, per CPU (see sroce_task_work()). */
static DEFINE_PER_CPU(atomic_t, sroce_task_runners);

/*
 * Streaming passes go to a CPU beside the application's: see
 * sroce_task_queue_beside().
 */
static bool sroce_linger_beside = true;
module_param_named(linger_beside, sroce_linger_beside, bool, 0644);
MODULE_PARM_DESC(linger_beside,
		 "Run a streaming QP's requester on a CPU other than the posting thread's (default on)");

/* Claim the task for this caller; false if someone else runs it. */
static bool sroce_task_claim(struct sroce_task *task)
{
	int old = atomic_read(&task->state);

	for (;;) {
		int next = old == SROCE_TASK_IDLE ? SROCE_TASK_RUNNING :
						    SROCE_TASK_RERUN;

		if (old == SROCE_TASK_RERUN)
			return false;
		if (atomic_try_cmpxchg(&task->state, &old, next))
			return next == SROCE_TASK_RUNNING;
	}
}

/*
 * Run passes until one finds nothing left; the caller owns the task.
 *
 * A caller runs at most SROCE_TASK_MAX_PASSES passes, those asked for
 * while it ran included, then the workqueue goes on. The bound matters
 * for passes that ask for the next one themselves: on veth a pass's own
 * packets are answered inside it (the peer's receive runs in the send's
 * local_bh_enable()), so an RNR back-off shorter than a pass would have
 * the requester resend from the application's post_send() for ever, while
 * only that application could post the receive that ends it.
 */
static void sroce_task_queue_beside(struct sroce_task *task);

static void sroce_task_loop(struct sroce_task *task)
{
	bool atomic_ctx = in_softirq() || irqs_disabled();
	int passes = 0;

	for (;;) {
		bool more = !READ_ONCE(task->stopped) && task->fn(task);

		if (!more) {
			if (task->defer && !READ_ONCE(task->stopped)) {
				task->defer = false;
				sroce_task_queue_beside(task);
				return;
			}
			int old = SROCE_TASK_RUNNING;

			if (atomic_try_cmpxchg(&task->state, &old,
					       SROCE_TASK_IDLE))
				return;
			/* Asked again while running: one more pass. */
			atomic_set(&task->state, SROCE_TASK_RUNNING);
		}
		/* The budget ran out: go on from the workqueue. */
		if (++passes >= SROCE_TASK_MAX_PASSES || (more && atomic_ctx)) {
			queue_work(sroce_wq, &task->work);
			return;
		}
		if (!atomic_ctx)
			cond_resched();
	}
}

static void sroce_task_work(struct work_struct *work)
{
	atomic_t *runners = per_cpu_ptr(&sroce_task_runners,
					raw_smp_processor_id());

	atomic_inc(runners);
	sroce_task_loop(container_of(work, struct sroce_task, work));
	atomic_dec(runners);
}

/**
 * sroce_task_defer - from inside @task's function: end this pass and go
 *	on from the (unbound) linger workqueue instead of going idle
 * @task: the task whose function is running
 */
void sroce_task_defer(struct sroce_task *task)
{
	task->defer = true;
}

void sroce_task_init(struct sroce_task *task,
		     bool (*fn)(struct sroce_task *task))
{
	atomic_set(&task->state, SROCE_TASK_IDLE);
	task->stopped = false;
	task->defer = false;
	task->fn = fn;
	INIT_WORK(&task->work, sroce_task_work);
}

/**
 * sroce_task_run - run @task here, or make its current runner go again
 * @task: the task
 */
void sroce_task_run(struct sroce_task *task)
{
	if (READ_ONCE(task->stopped))
		return;
	if (sroce_task_claim(task))
		sroce_task_loop(task);
}

/* Claim @task and run it from @wq, or make its current runner go again. */
static void sroce_task_queue(struct sroce_task *task,
			     struct workqueue_struct *wq)
{
	if (READ_ONCE(task->stopped))
		return;
	if (sroce_task_claim(task))
		queue_work(wq, &task->work);
}

/**
 * sroce_task_schedule - run @task from the workqueue (never inline)
 * @task: the task
 *
 * For callers that hold locks the task's function takes.
 */
void sroce_task_schedule(struct sroce_task *task)
{
	sroce_task_queue(task, sroce_wq);
}

/*
 * A CPU for a pass handed off by the thread running here: another online
 * CPU where no sroce worker runs (looking at up to 8, from the next one
 * on), or -1 if there is none (a single CPU, or every one of them busy,
 * where the unbound workqueue spreads passes better). On veth the pass
 * also runs the peer's whole receive side, so it is the busiest thread
 * of a stream; left to the scheduler it often shared a CPU with the
 * busy-polling application that posted.
 */
static int sroce_task_cpu_beside(void)
{
	int this = raw_smp_processor_id();	/* a hint: may move */
	int cpu = this, i;

	for (i = 0; i < 8; i++) {
		cpu = cpumask_next(cpu, cpu_online_mask);
		if (cpu >= nr_cpu_ids)
			cpu = cpumask_first(cpu_online_mask);
		if (cpu == this)
			break;
		if (!atomic_read(per_cpu_ptr(&sroce_task_runners, cpu)))
			return cpu;
	}
	return -1;
}

/*
 * Queue @task's pass (the caller owns it) away from the caller's CPU: on
 * the bound high-priority workqueue of the CPU beside it, where the
 * passes that follow stay. A CPU that goes offline meanwhile only costs
 * placement: its work then runs wherever the workqueue puts it.
 */
static void sroce_task_queue_beside(struct sroce_task *task)
{
	int cpu = sroce_linger_beside ? sroce_task_cpu_beside() : -1;

	if (cpu < 0)
		queue_work(sroce_linger_wq, &task->work);
	else
		queue_work_on(cpu, sroce_wq, &task->work);
}

/**
 * sroce_task_schedule_linger - run @task from a worker beside the caller
 * @task: the task
 *
 * For a doorbell of a streaming application: the pass runs on another
 * CPU, while the application goes on posting.
 */
void sroce_task_schedule_linger(struct sroce_task *task)
{
	if (READ_ONCE(task->stopped))
		return;
	if (sroce_task_claim(task))
		sroce_task_queue_beside(task);
}

/**
 * sroce_task_cpu_take - a CPU beside the caller's for work of sroce's
 *	that is not a task's, counted there as a running worker until
 *	sroce_task_cpu_give(), so that no other such work or task pass is
 *	sent there meanwhile
 *
 * Return: the CPU, or -1 if there is none (one CPU online, or sroce's
 * workers run on each of the others).
 */
int sroce_task_cpu_take(void)
{
	int cpu = sroce_task_cpu_beside();

	if (cpu >= 0)
		atomic_inc(per_cpu_ptr(&sroce_task_runners, cpu));
	return cpu;
}

void sroce_task_cpu_give(int cpu)
{
	atomic_dec(per_cpu_ptr(&sroce_task_runners, cpu));
}

/*
 * Steered receives running on this CPU (sroce_net.c's queue workers, from
 * before their batch to after the softirqs it raised).
 */
static DEFINE_PER_CPU(atomic_t, sroce_task_in_rx);

/*
 * Return: this CPU's count, for sroce_task_rx_exit() (which may run on
 * another CPU if this one goes offline meanwhile).
 */
atomic_t *sroce_task_rx_enter(void)
{
	atomic_t *in_rx = this_cpu_ptr(&sroce_task_in_rx);

	atomic_inc(in_rx);
	return in_rx;
}

void sroce_task_rx_exit(atomic_t *in_rx)
{
	atomic_dec(in_rx);
}

/**
 * sroce_task_kick - run @task as sroce_task_run() does, except inside a
 *	steered receive, which hands it to a CPU beside
 * @task: the task
 *
 * For the completer's kick of its requester. A stream's ACKs are received
 * on the steering CPU; run there, the requester (whose window they opened)
 * would move onto the CPU that receives its bursts, and the two halves of
 * the transfer would share a CPU again (64 KiB WRITE 91-95 MiB/s with the
 * requester run there, 148-168 handed beside).
 */
void sroce_task_kick(struct sroce_task *task)
{
	if (atomic_read(this_cpu_ptr(&sroce_task_in_rx)))
		sroce_task_schedule_linger(task);
	else
		sroce_task_run(task);
}

/* Does a worker of sroce's run (or is one taken) on this CPU? */
bool sroce_task_cpu_busy(void)
{
	return atomic_read(this_cpu_ptr(&sroce_task_runners)) > 0;
}

/* Queue @work on @cpu (from sroce_task_cpu_take()), high priority. */
void sroce_task_work_on(int cpu, struct work_struct *work)
{
	queue_work_on(cpu, sroce_wq, work);
}

/**
 * sroce_task_sync - wait until no pass of @task is running
 * @task: the task
 *
 * May sleep. The caller has made sure new passes find nothing to do.
 */
void sroce_task_sync(struct sroce_task *task)
{
	while (atomic_read(&task->state) != SROCE_TASK_IDLE) {
		flush_work(&task->work);
		if (atomic_read(&task->state) != SROCE_TASK_IDLE)
			schedule_timeout_uninterruptible(1);
	}
}

/**
 * sroce_task_stop - stop @task for good and wait for its last pass
 * @task: the task
 *
 * May sleep. Runs asked for afterwards do nothing.
 */
void sroce_task_stop(struct sroce_task *task)
{
	WRITE_ONCE(task->stopped, true);
	/* A runner in another context finishes its pass and sees stopped. */
	sroce_task_sync(task);
	cancel_work_sync(&task->work);
}

int sroce_task_wq_init(void)
{
	sroce_wq = alloc_workqueue("sroce",
				   WQ_MEM_RECLAIM | WQ_HIGHPRI | WQ_PERCPU, 0);
	if (!sroce_wq)
		return -ENOMEM;
	sroce_linger_wq = alloc_workqueue("sroce_linger",
					  WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	if (!sroce_linger_wq) {
		destroy_workqueue(sroce_wq);
		return -ENOMEM;
	}
	return 0;
}

void sroce_task_wq_exit(void)
{
	destroy_workqueue(sroce_linger_wq);
	destroy_workqueue(sroce_wq);
}
