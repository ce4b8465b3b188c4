// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: memory windows (IBTA vol. 1, 10.6.7), and the rkey lookup that
 * sees through them.
 *
 * A window is a key object (struct sroce_mr of type SROCE_MR_WINDOW) in
 * sdev->key_xa, above the MRs' indexes. A bind, executed by the requester
 * in order with the QP's other work requests, points it at a range of an
 * MR with remote access rights and gives it a new key (same index, new
 * variant byte: the consumer's for type 2, ibv_inc_rkey() of the old one
 * for type 1). The responder resolves a window's rkey to its MR, checking
 * the window's range, rights and PD and, for type 2 (type 2B in IBTA's
 * terms), that the request came through the QP that bound it: named by
 * the QP's serial, not its QPN, so a QP created later with a reused QPN
 * does not inherit a destroyed QP's windows.
 *
 * Type 1 windows are rebound at will (length 0 unbinds). Type 2 windows
 * are bound once, then invalidated (LOCAL_INV, or a SEND with invalidate
 * received on their QP) before the next bind. Zero-based windows are not
 * offered.
 *
 * Locking: sdev->mw_lock (taken with bottom halves off: the responder runs
 * in softirq) covers every window's state, the MRs' nwindows counts and
 * dying flags: deregistration marks an MR dying only while no window is
 * bound to it, and a bind takes no dying MR, so a bind either holds the
 * MR or sees it go. Keys are looked up under RCU (xa_load); the key
 * table's own lock, which process context takes with bottom halves on,
 * is never taken under mw_lock. Readers find a window under RCU and a
 * reference (sroce_mr_get) like any key, then read its binding under the
 * lock. A bound window holds a reference on its MR.
 */

#include "sroce.h"

#define SROCE_MW_ACCESS	(IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_ATOMIC)

int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct sroce_mw *mw = to_smw(ibmw);
	struct sroce_mr *win;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	win = sroce_mr_new(ibmw->pd, SROCE_MR_WINDOW, 0);
	if (IS_ERR(win))
		return PTR_ERR(win);
	win->ibmr.pd = ibmw->pd;
	win->mw_type = ibmw->type;
	mw->win = win;
	ibmw->rkey = win->key;
	return 0;
}

/* Under mw_lock: detach @win from its MR; the caller puts what it returns. */
static struct sroce_mr *sroce_mw_unbind_locked(struct sroce_mr *win)
{
	struct sroce_mr *parent = win->parent;

	win->parent = NULL;
	WRITE_ONCE(win->valid, false);
	if (parent)
		parent->nwindows--;
	return parent;
}

int sroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mr *win = to_smw(ibmw)->win;
	struct sroce_mr *parent;

	/* No bind finds it now; one under way has finished when we lock. */
	xa_erase(&sdev->key_xa, win->key >> 8);
	spin_lock_bh(&sdev->mw_lock);
	parent = sroce_mw_unbind_locked(win);
	spin_unlock_bh(&sdev->mw_lock);
	if (parent)
		sroce_mr_put(parent);
	sroce_mr_release(sdev, win);
	return 0;
}

/**
 * sroce_mr_unhook - remove an MR's key unless windows are bound to it
 * @sdev: the device
 * @mr: a USER, DMA or FAST MR being deregistered
 *
 * Return: true when the key is gone (release the MR), false when a window
 * is bound to it.
 */
bool sroce_mr_unhook(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	bool busy;

	spin_lock_bh(&sdev->mw_lock);
	busy = mr->nwindows;
	if (!busy)
		mr->dying = true;
	spin_unlock_bh(&sdev->mw_lock);
	/* Only if the slot is still this MR's: a rereg put its successor there. */
	if (!busy)
		xa_cmpxchg(&sdev->key_xa, mr->key >> 8, mr, NULL, 0);
	return !busy;
}

/* Under mw_lock: may @qp bind a range of the MR @lkey names, for @access? */
static struct sroce_mr *sroce_mw_bind_target(struct sroce_dev *sdev,
					     struct sroce_qp *qp, u32 lkey,
					     u64 addr, u64 len, u32 access)
{
	struct sroce_mr *mr = xa_load(&sdev->key_xa, lkey >> 8);

	if (!mr || (mr->type != SROCE_MR_USER && mr->type != SROCE_MR_FAST) ||
	    mr->dying || !mr->valid || mr->key != lkey ||
	    mr->ibmr.pd != sroce_resp_pd(qp))
		return NULL;
	if (!(mr->access & IB_ACCESS_MW_BIND) ||
	    !sroce_mr_covers(mr, addr, len))
		return NULL;
	/* Remote writes through a window need a locally writable MR. */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE))
		return NULL;
	if (!refcount_inc_not_zero(&mr->ref))
		return NULL;
	return mr;
}

/**
 * sroce_mw_bind - execute a BIND_MW work request
 * @qp: the QP whose send queue holds it (RC or UC)
 * @wqe: the WQE (copied out of the ring: its fields are the user's)
 *
 * Return: IB_WC_SUCCESS, or IB_WC_MW_BIND_ERR with nothing changed.
 */
u8 sroce_mw_bind(struct sroce_qp *qp, const struct sroce_send_wqe *wqe)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u64 addr = wqe->wr.bind_mw.addr, len = wqe->wr.bind_mw.length;
	u32 rkey = wqe->wr.bind_mw.rkey, access = wqe->wr.bind_mw.access;
	struct sroce_mr *win, *mr = NULL, *old = NULL;
	u8 status = IB_WC_MW_BIND_ERR;

	/*
	 * A window grants remote rights only. LOCAL_WRITE, which users pass
	 * as the verbs man pages show, is no right of a window and changes
	 * nothing (C10-74 asks it of the MR); anything else is refused.
	 */
	if (access & ~(SROCE_MW_ACCESS | IB_ACCESS_LOCAL_WRITE))
		return status;
	access &= SROCE_MW_ACCESS;

	spin_lock_bh(&sdev->mw_lock);
	win = xa_load(&sdev->key_xa, rkey >> 8);
	if (!win || win->type != SROCE_MR_WINDOW ||
	    win->ibmr.pd != sroce_resp_pd(qp))
		goto out;
	/* A type 2 window is bound once, then invalidated. */
	if (win->mw_type == IB_MW_TYPE_2 && win->valid)
		goto out;
	if (len) {
		mr = sroce_mw_bind_target(sdev, qp, wqe->wr.bind_mw.mr_lkey,
					  addr, len, access);
		if (!mr)
			goto out;
		mr->nwindows++;
	}
	old = sroce_mw_unbind_locked(win);
	win->parent = mr;
	win->iova = addr;
	win->length = len;
	win->access = access;
	win->bound_qp = qp->serial;
	WRITE_ONCE(win->key, rkey);
	/* Length 0 unbinds a type 1 window; a type 2 one stays bound. */
	WRITE_ONCE(win->valid, len || win->mw_type == IB_MW_TYPE_2);
	status = IB_WC_SUCCESS;
out:
	spin_unlock_bh(&sdev->mw_lock);
	if (old)
		sroce_mr_put(old);
	return status;
}

/*
 * Invalidate the type 2 window @key names: locally by any QP of its PD,
 * remotely only through the QP it is bound to (type 2B).
 * Return: 0, -EINVAL when that is not allowed, -ENOENT for no window.
 */
static int sroce_mw_invalidate(struct sroce_qp *qp, u32 key, bool remote)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_mr *win, *parent = NULL;
	int err = -EINVAL;

	spin_lock_bh(&sdev->mw_lock);
	win = xa_load(&sdev->key_xa, key >> 8);
	if (!win || win->type != SROCE_MR_WINDOW) {
		err = -ENOENT;
		goto out;
	}
	if (win->mw_type != IB_MW_TYPE_2 || win->ibmr.pd != sroce_resp_pd(qp) ||
	    win->key != key)
		goto out;
	if (win->valid && remote && win->bound_qp != qp->serial)
		goto out;
	parent = sroce_mw_unbind_locked(win);
	err = 0;
out:
	spin_unlock_bh(&sdev->mw_lock);
	if (parent)
		sroce_mr_put(parent);
	return err;
}

/**
 * sroce_key_invalidate - LOCAL_INV, or a SEND with invalidate received
 * @qp: the QP the request came through
 * @key: a type 2 window's rkey or a FAST MR's key
 * @remote: received from the peer (IETH)
 *
 * Return: 0, or -EINVAL when @key names nothing @qp may invalidate.
 */
int sroce_key_invalidate(struct sroce_qp *qp, u32 key, bool remote)
{
	int err = sroce_mw_invalidate(qp, key, remote);

	if (err != -ENOENT)
		return err;
	return sroce_mr_invalidate(to_sdev(qp->ibqp.device), sroce_resp_pd(qp), key);
}

/* Under mw_lock: the MR behind @win for this access, with a reference. */
static struct sroce_mr *sroce_mw_resolve(struct sroce_mr *win,
					 struct sroce_qp *qp, u32 rkey,
					 u64 iova, u64 len, int access)
{
	struct sroce_mr *mr = win->parent;

	if (!win->valid || win->key != rkey || !mr ||
	    win->ibmr.pd != sroce_resp_pd(qp))
		return NULL;
	if (win->mw_type == IB_MW_TYPE_2 && win->bound_qp != qp->serial)
		return NULL;
	if ((win->access & access) != access || !sroce_mr_covers(win, iova, len))
		return NULL;
	/* The MR itself: a FAST MR may have been invalidated under it. */
	if (!READ_ONCE(mr->valid) || !sroce_mr_covers(mr, iova, len) ||
	    !refcount_inc_not_zero(&mr->ref))
		return NULL;
	return mr;
}

/**
 * sroce_mr_get_remote - the MR an rkey from the wire names, for an access
 *	to [@iova, @iova + @len) needing @access through @qp
 * @qp: the responder's QP
 * @rkey: an MR's key, or a bound window's
 * @iova: first byte
 * @len: bytes
 * @access: IB_ACCESS_REMOTE_* every one of which must be granted
 *
 * Return: the MR with a reference (sroce_mr_put()), or NULL.
 */
struct sroce_mr *sroce_mr_get_remote(struct sroce_qp *qp, u32 rkey, u64 iova,
				     u64 len, int access)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_mr *key = sroce_mr_get(sdev, rkey), *mr;

	if (!key)
		return NULL;
	if (key->type != SROCE_MR_WINDOW) {
		if (sroce_mr_allows(key, sroce_resp_pd(qp), iova, len, access))
			return key;
		sroce_mr_put(key);
		return NULL;
	}
	spin_lock_bh(&sdev->mw_lock);
	mr = sroce_mw_resolve(key, qp, rkey, iova, len, access);
	spin_unlock_bh(&sdev->mw_lock);
	sroce_mr_put(key);
	return mr;
}

/**
 * sroce_mr_get_remote_whole - the MR an rkey names, for an access to all
 *	of it (or of the window) needing @access through @qp
 * @qp: the responder's QP
 * @rkey: an MR's key, or a bound window's
 * @access: IB_ACCESS_* every one of which must be granted
 *
 * Return: the MR with a reference (sroce_mr_put()), or NULL.
 */
struct sroce_mr *sroce_mr_get_remote_whole(struct sroce_qp *qp, u32 rkey,
					   int access)
{
	struct sroce_mr *key = sroce_mr_get(to_sdev(qp->ibqp.device), rkey);
	u64 start;

	if (!key)
		return NULL;
	start = key->iova;	/* the MR's, or the window's */
	sroce_mr_put(key);
	/* Looked up again with every check: the key may change meanwhile. */
	return sroce_mr_get_remote(qp, rkey, start, 0, access);
}
