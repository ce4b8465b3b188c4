// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: the network side — one pair of RoCEv2 UDP sockets (IPv4 and
 * IPv6, port 4791) per network namespace, shared by the sroce devices
 * whose netdevs live there, and the receive entry point.
 *
 * Keeping the sockets in the netdev's own namespace is what lets sroce
 * work inside any namespace and sit beside rdma_rxe, which binds 4791 in
 * init_net only.
 *
 * Locking and lifetime:
 *  - sn->lock (mutex) guards sn->users, sn->dead and the sockets. The
 *    sockets are opened by the first device of a namespace and released
 *    by the last one.
 *  - sn->devs maps ifindex -> sroce_dev; the receive path reads it under
 *    RCU (UDP delivery runs inside rcu_read_lock). A device is erased and
 *    an RCU grace period passes before the device is torn down.
 *  - A namespace being dismantled has its devices unregistered by ib_core
 *    work that may still be running when our pernet exit is called, so
 *    the exit waits until the last device has let go of the sockets.
 */

#include <linux/module.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>

#include "sroce.h"

struct sroce_netns {
	struct mutex lock;		/* users, dead, sock4, sock6 */
	unsigned int users;
	bool dead;
	struct socket *sock4;
	struct socket *sock6;
	struct xarray devs;
	wait_queue_head_t idle_wq;	/* pernet exit waits for users == 0 */
};

static unsigned int sroce_net_id __read_mostly;

static int sroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct sroce_netns *sn = rcu_dereference_sk_user_data(sk);
	struct sroce_dev *sdev = NULL;

	if (sn && skb->dev)
		sdev = xa_load(&sn->devs, skb->dev->ifindex);
	if (!sdev) {
		kfree_skb(skb);
		return 0;
	}

	sroce_count(sdev, SROCE_CNT_RX_PACKETS, 1);
	sroce_count(sdev, SROCE_CNT_RX_BYTES, skb->len);

	/* No queue pair exists yet to take the packet. */
	sroce_count(sdev, SROCE_CNT_RX_DROP_NO_QP, 1);
	kfree_skb(skb);
	return 0;
}

static struct socket *sroce_udp_open(struct net *net, struct sroce_netns *sn,
				     bool ipv6)
{
	struct udp_port_cfg udp_cfg = {
		.local_udp_port = htons(SROCE_ROCE_V2_PORT),
	};
	struct udp_tunnel_sock_cfg tnl_cfg = {
		.sk_user_data = sn,
		.encap_type = 1,
		.encap_rcv = sroce_udp_encap_recv,
	};
	struct socket *sock;
	int err;

	if (ipv6) {
		udp_cfg.family = AF_INET6;
		udp_cfg.ipv6_v6only = 1;
	} else {
		udp_cfg.family = AF_INET;
	}

	err = udp_sock_create(net, &udp_cfg, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(net, sock, &tnl_cfg);
	return sock;
}

static void sroce_udp_close(struct sroce_netns *sn)
{
	if (sn->sock6)
		udp_tunnel_sock_release(sn->sock6);
	if (sn->sock4)
		udp_tunnel_sock_release(sn->sock4);
	sn->sock4 = NULL;
	sn->sock6 = NULL;
}

static int sroce_udp_open_all(struct net *net, struct sroce_netns *sn)
{
	struct socket *sock;

	sock = sroce_udp_open(net, sn, false);
	if (IS_ERR(sock)) {
		if (PTR_ERR(sock) == -EADDRINUSE)
			pr_err("%s: UDP port %u is already bound in this network namespace (rdma_rxe?)\n",
			       SROCE_DRV_NAME, SROCE_ROCE_V2_PORT);
		return PTR_ERR(sock);
	}
	sn->sock4 = sock;

	if (!IS_ENABLED(CONFIG_IPV6))
		return 0;
	sock = sroce_udp_open(net, sn, true);
	if (IS_ERR(sock)) {
		/* A namespace without IPv6 still carries RoCEv2 over IPv4. */
		if (PTR_ERR(sock) == -EAFNOSUPPORT)
			return 0;
		if (PTR_ERR(sock) == -EADDRINUSE)
			pr_err("%s: UDP port %u (IPv6) is already bound in this network namespace (rdma_rxe?)\n",
			       SROCE_DRV_NAME, SROCE_ROCE_V2_PORT);
		sroce_udp_close(sn);
		return PTR_ERR(sock);
	}
	sn->sock6 = sock;
	return 0;
}

/**
 * sroce_net_attach - give @sdev the RoCEv2 sockets of its netdev's namespace
 * @sdev: a device being created; sdev->ndev is held
 *
 * Return: 0, -EADDRINUSE if another user holds port 4791 there, or
 * -ENODEV if the namespace is being dismantled.
 */
int sroce_net_attach(struct sroce_dev *sdev)
{
	struct net *net = dev_net(sdev->ndev);
	struct sroce_netns *sn = net_generic(net, sroce_net_id);
	int err = 0;

	mutex_lock(&sn->lock);
	if (sn->dead) {
		err = -ENODEV;
		goto out;
	}
	if (!sn->users) {
		err = sroce_udp_open_all(net, sn);
		if (err)
			goto out;
	}
	err = xa_insert(&sn->devs, sdev->ifindex, sdev, GFP_KERNEL);
	if (err) {
		if (!sn->users)
			sroce_udp_close(sn);
		goto out;
	}
	sn->users++;
	sdev->netns = sn;
out:
	mutex_unlock(&sn->lock);
	return err;
}

/* Undo sroce_net_attach(); safe on a device that never attached. */
void sroce_net_detach(struct sroce_dev *sdev)
{
	struct sroce_netns *sn = sdev->netns;

	if (!sn)
		return;

	mutex_lock(&sn->lock);
	xa_erase(&sn->devs, sdev->ifindex);
	if (!--sn->users)
		sroce_udp_close(sn);
	sdev->netns = NULL;
	wake_up_all(&sn->idle_wq);
	mutex_unlock(&sn->lock);

	/* Let receivers that found sdev in sn->devs finish with it. */
	synchronize_rcu();
}

static int __net_init sroce_netns_init(struct net *net)
{
	struct sroce_netns *sn = net_generic(net, sroce_net_id);

	mutex_init(&sn->lock);
	xa_init(&sn->devs);
	init_waitqueue_head(&sn->idle_wq);
	return 0;
}

static void __net_exit sroce_netns_exit(struct net *net)
{
	struct sroce_netns *sn = net_generic(net, sroce_net_id);

	mutex_lock(&sn->lock);
	sn->dead = true;
	mutex_unlock(&sn->lock);

	/*
	 * The netdevs are gone; their devices' unregistration may not be.
	 * Taking the lock after the wait fences the last detach.
	 */
	wait_event(sn->idle_wq, !READ_ONCE(sn->users));
	mutex_lock(&sn->lock);
	mutex_unlock(&sn->lock);
	WARN_ON(sn->sock4 || sn->sock6);
	xa_destroy(&sn->devs);
	mutex_destroy(&sn->lock);
}

static struct pernet_operations sroce_net_ops = {
	.init = sroce_netns_init,
	.exit = sroce_netns_exit,
	.id = &sroce_net_id,
	.size = sizeof(struct sroce_netns),
};

int sroce_net_init(void)
{
	return register_pernet_subsys(&sroce_net_ops);
}

void sroce_net_exit(void)
{
	unregister_pernet_subsys(&sroce_net_ops);
}
