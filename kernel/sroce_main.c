// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: module life cycle, the "sroce" rdma link type and the netdev
 * notifier that makes every device follow its netdev.
 *
 * Locking:
 *  - sroce_dev_list_lock (mutex) guards sroce_dev_list and the
 *    registered flag of its entries. It nests inside RTNL (the notifier
 *    runs under RTNL) and is never held across ib_register_device().
 *  - Port state changes are serialised by RTNL (notifier) plus
 *    sdev->port_lock for readers in query_port.
 *
 * Life of a device: newlink() creates and registers it and then puts it
 * on sroce_dev_list. NETDEV_UNREGISTER, "rdma link delete" and rmmod all
 * end in ib_core's unregistration, which calls sroce_dealloc_driver();
 * that takes the device off the list and wakes a waiting rmmod.
 */

#include <linux/module.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/rtnetlink.h>
#include <linux/wait.h>
#include <rdma/rdma_netlink.h>

#include "sroce.h"

/* The tracepoints' definitions live here (and only here). */
#define CREATE_TRACE_POINTS
#include "sroce_trace.h"

static LIST_HEAD(sroce_dev_list);
static DEFINE_MUTEX(sroce_dev_list_lock);
static DECLARE_WAIT_QUEUE_HEAD(sroce_dev_list_wq);

/**
 * sroce_dev_get_by_netdev - find the sroce device bound to @ndev
 * @ndev: the netdev
 *
 * Returns the device with an ib_device registration reference held
 * (release with ib_device_put()), or NULL.
 */
struct sroce_dev *sroce_dev_get_by_netdev(struct net_device *ndev)
{
	struct sroce_dev *sdev, *found = NULL;

	mutex_lock(&sroce_dev_list_lock);
	list_for_each_entry(sdev, &sroce_dev_list, list) {
		if (sdev->ndev == ndev && ib_device_try_get(&sdev->ibdev)) {
			found = sdev;
			break;
		}
	}
	mutex_unlock(&sroce_dev_list_lock);
	return found;
}

static bool sroce_netdev_bound(struct net_device *ndev)
{
	struct sroce_dev *sdev;
	bool bound = false;

	lockdep_assert_held(&sroce_dev_list_lock);
	list_for_each_entry(sdev, &sroce_dev_list, list)
		if (sdev->ndev == ndev)
			bound = true;
	return bound;
}

/*
 * Claim @ndev for a device being created: fails when another sroce
 * device already rides on it. The claim is the list entry itself.
 */
int sroce_dev_list_add(struct sroce_dev *sdev)
{
	int ret = 0;

	mutex_lock(&sroce_dev_list_lock);
	if (sroce_netdev_bound(sdev->ndev))
		ret = -EEXIST;
	else
		list_add_tail(&sdev->list, &sroce_dev_list);
	mutex_unlock(&sroce_dev_list_lock);
	return ret;
}

void sroce_dev_list_del(struct sroce_dev *sdev)
{
	mutex_lock(&sroce_dev_list_lock);
	list_del_init(&sdev->list);
	mutex_unlock(&sroce_dev_list_lock);
	wake_up_all(&sroce_dev_list_wq);
}

static int sroce_newlink(const char *ibdev_name, struct net_device *ndev)
{
	if (ndev->type != ARPHRD_ETHER || ndev->addr_len != ETH_ALEN) {
		pr_err("%s: netdev %s has no Ethernet header; RoCE needs one\n",
		       SROCE_DRV_NAME, ndev->name);
		return -EOPNOTSUPP;
	}
	if (is_vlan_dev(ndev)) {
		/*
		 * ib_core derives VLAN GIDs for the real device; a device on
		 * the VLAN itself would see the same addresses twice.
		 */
		pr_err("%s: netdev %s is a VLAN; create the device on its real netdev\n",
		       SROCE_DRV_NAME, ndev->name);
		return -EOPNOTSUPP;
	}
	return sroce_dev_create(ibdev_name, ndev);
}

static struct rdma_link_ops sroce_link_ops = {
	.type = SROCE_LINK_TYPE,
	.newlink = sroce_newlink,
};

/*
 * Called under RTNL. NETDEV_UNREGISTER is broadcast again while the
 * netdev still has references, so a device whose registration was still
 * in flight at the first broadcast is caught by a later one.
 */
static int sroce_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct sroce_dev *sdev;

	sdev = sroce_dev_get_by_netdev(ndev);
	if (!sdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:
		ib_unregister_device_queued(&sdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		sroce_dev_port_update(sdev);
		break;
	case NETDEV_CHANGEMTU:
		sroce_dev_mtu_update(sdev);
		break;
	default:
		break;
	}
	ib_device_put(&sdev->ibdev);
	return NOTIFY_OK;
}

static struct notifier_block sroce_netdev_notifier = {
	.notifier_call = sroce_netdev_event,
};

/*
 * Unregister every device. Devices already on their way out (queued by
 * the notifier) cannot be taken a reference on; wait for their dealloc.
 */
static void sroce_unregister_all(void)
{
	struct sroce_dev *sdev;

	for (;;) {
		struct sroce_dev *victim = NULL;

		mutex_lock(&sroce_dev_list_lock);
		list_for_each_entry(sdev, &sroce_dev_list, list) {
			if (ib_device_try_get(&sdev->ibdev)) {
				victim = sdev;
				break;
			}
		}
		mutex_unlock(&sroce_dev_list_lock);
		if (!victim)
			break;
		ib_unregister_device_and_put(&victim->ibdev);
	}
	wait_event(sroce_dev_list_wq, list_empty_careful(&sroce_dev_list));
}

static int __init sroce_module_init(void)
{
	int err;

	sroce_icrc_init();
	err = sroce_crc_engine_init();
	if (err)
		goto err_crc;
	err = sroce_task_wq_init();
	if (err)
		goto err_crc;
	err = sroce_odp_wq_init();
	if (err)
		goto err_wq;
	err = sroce_dmabuf_init();
	if (err)
		goto err_odp;
	err = sroce_net_init();
	if (err)
		goto err_dmabuf;

	err = register_netdevice_notifier(&sroce_netdev_notifier);
	if (err)
		goto err_net;

	rdma_link_register(&sroce_link_ops);
	pr_debug("%s: loaded\n", SROCE_DRV_NAME);
	return 0;

err_net:
	sroce_net_exit();
err_dmabuf:
	sroce_dmabuf_exit();
err_odp:
	sroce_odp_wq_exit();
err_wq:
	sroce_task_wq_exit();
err_crc:
	sroce_crc_engine_exit();
	return err;
}

static void __exit sroce_module_exit(void)
{
	rdma_link_unregister(&sroce_link_ops);
	unregister_netdevice_notifier(&sroce_netdev_notifier);
	sroce_unregister_all();
	sroce_net_exit();
	sroce_dmabuf_exit();
	sroce_odp_wq_exit();
	sroce_task_wq_exit();
	sroce_crc_engine_exit();
	pr_debug("%s: unloaded\n", SROCE_DRV_NAME);
}

module_init(sroce_module_init);
module_exit(sroce_module_exit);

MODULE_AUTHOR("sroce developers");
MODULE_DESCRIPTION("sroce: software RDMA over Converged Ethernet (RoCEv2)");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK(SROCE_LINK_TYPE);
/* User contexts need /dev/infiniband/uverbs*, which ib_uverbs provides. */
MODULE_SOFTDEP("pre: ib_uverbs");
