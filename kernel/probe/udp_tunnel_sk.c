// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe (kernel/Kbuild, never linked): UDP tunnel sockets are set up and
 * released by their struct sock (7.x), not their struct socket.
 */
#include <net/udp_tunnel.h>

void probe_udp_tunnel(struct net *net, struct sock *sk,
		      struct udp_tunnel_sock_cfg *cfg);
void probe_udp_tunnel(struct net *net, struct sock *sk,
		      struct udp_tunnel_sock_cfg *cfg)
{
	setup_udp_tunnel_sock(net, sk, cfg);
	udp_tunnel_sock_release(sk);
}
