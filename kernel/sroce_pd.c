// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: protection domains and XRC domains.
 *
 * A PD is a number in sdev->pd_xa; the xarray both hands out PD numbers
 * and bounds their count to SROCE_MAX_PD. The xarray has its own lock.
 * An XRC domain is only counted (sdev->nxrcd, atomic, bounded by
 * SROCE_MAX_XRCD): its SRQs and target QPs name it by pointer, and
 * ib_core keeps it while any of them, or any process, uses it.
 */

#include "sroce.h"

int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_pd *pd = to_spd(ibpd);
	struct sroce_alloc_pd_resp resp = {};
	int err;

	err = xa_alloc_cyclic(&sdev->pd_xa, &pd->pdn, pd,
			      XA_LIMIT(1, SROCE_MAX_PD), &sdev->pd_next,
			      GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;

	if (udata) {
		resp.pdn = pd->pdn;
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err) {
			xa_erase(&sdev->pd_xa, pd->pdn);
			return err;
		}
	}
	return 0;
}

int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_pd *pd = to_spd(ibpd);

	xa_erase(&sdev->pd_xa, pd->pdn);
	return 0;
}

int sroce_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibxrcd->device);

	if (atomic_inc_return(&sdev->nxrcd) > SROCE_MAX_XRCD) {
		atomic_dec(&sdev->nxrcd);
		return -ENOMEM;
	}
	return 0;
}

int sroce_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	atomic_dec(&to_sdev(ibxrcd->device)->nxrcd);
	return 0;
}
