// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// sroce_cm_cycles: N rdma_cm connections in a row, each one connected,
// used for one checked message each way, disconnected and torn down
// (QP, MRs, cm_id) before the next: the loop that leaks QPs or cm_ids,
// or wedges a device, if connection teardown is wrong anywhere.
//
//   sroce_cm_cycles -s -b ADDR [-p PORT] [-n N]   server: accept N
//   sroce_cm_cycles -c ADDR [-p PORT] [-n N]      client: connect N times
//
// Each cycle the client sends "cycle <i>" and the server answers
// "ack <i>"; both check what they receive. The server disconnects once
// its answer completed (was acknowledged), and the client waits for that
// before it tears down: a client that went first could destroy its QP
// while the server is still retransmitting an answer whose ACK was lost,
// and fail a correct server on a lossy link. Prints
// "cm_cycles: N cycles, N messages checked" and exits 0 on success.

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <poll.h>
#include <unistd.h>

namespace {

constexpr size_t kMsg = 64;

int fail(const char *what, int i)
{
	std::fprintf(stderr, "cm_cycles: cycle %d: %s: %s\n", i, what,
		     std::strerror(errno));
	return 1;
}

// A completion that did not arrive (@got <= 0) or failed.
int comp_fail(const char *what, int i, int got, const ibv_wc &wc)
{
	if (got <= 0)
		return fail(what, i);
	std::fprintf(stderr, "cm_cycles: cycle %d: %s: status %s (%d)\n", i, what,
		     ibv_wc_status_str(wc.status), wc.status);
	return 1;
}

// Client: wait (up to 60 s) for the server's disconnect.
int wait_disconnect(rdma_cm_id *id, int i)
{
	pollfd f = {id->channel->fd, POLLIN, 0};
	rdma_cm_event *ev;

	if (poll(&f, 1, 60000) <= 0) {
		std::fprintf(stderr, "cm_cycles: cycle %d: no disconnect from the server in 60 s\n",
			     i);
		return 1;
	}
	if (rdma_get_cm_event(id->channel, &ev))
		return fail("rdma_get_cm_event", i);
	rdma_cm_event_type type = ev->event;
	rdma_ack_cm_event(ev);
	if (type != RDMA_CM_EVENT_DISCONNECTED) {
		std::fprintf(stderr, "cm_cycles: cycle %d: event %s, want DISCONNECTED\n", i,
			     rdma_event_str(type));
		return 1;
	}
	return 0;
}

rdma_addrinfo *getinfo(const char *addr, const char *port, bool passive)
{
	rdma_addrinfo hints = {}, *res = nullptr;

	hints.ai_port_space = RDMA_PS_TCP;
	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res)) {
		std::perror("rdma_getaddrinfo");
		return nullptr;
	}
	return res;
}

void qp_attr(ibv_qp_init_attr *attr)
{
	std::memset(attr, 0, sizeof(*attr));
	attr->cap.max_send_wr = attr->cap.max_recv_wr = 1;
	attr->cap.max_send_sge = attr->cap.max_recv_sge = 1;
	attr->sq_sig_all = 1;
	attr->qp_type = IBV_QPT_RC;
}

// One message each way on a connected id: @first is sent by the side
// that speaks first, @second is what it expects back.
int exchange(rdma_cm_id *id, bool client, int i, bool posted_recv,
	     char *rbuf, char *sbuf, ibv_mr *rmr, ibv_mr *smr)
{
	ibv_wc wc;
	int got;
	std::string want = (client ? "ack " : "cycle ") + std::to_string(i);
	std::string say = (client ? "cycle " : "ack ") + std::to_string(i);

	if (!posted_recv && rdma_post_recv(id, nullptr, rbuf, kMsg, rmr))
		return fail("rdma_post_recv", i);
	if (client) {
		std::snprintf(sbuf, kMsg, "%s", say.c_str());
		if (rdma_post_send(id, nullptr, sbuf, kMsg, smr, 0))
			return fail("rdma_post_send", i);
		if ((got = rdma_get_send_comp(id, &wc)) <= 0 || wc.status)
			return comp_fail("send completion", i, got, wc);
	}
	if ((got = rdma_get_recv_comp(id, &wc)) <= 0 || wc.status)
		return comp_fail("recv completion", i, got, wc);
	if (wc.byte_len != kMsg || std::strncmp(rbuf, want.c_str(), kMsg)) {
		std::fprintf(stderr, "cm_cycles: cycle %d: got '%.*s', want '%s'\n",
			     i, (int)kMsg, rbuf, want.c_str());
		return 1;
	}
	if (!client) {
		std::snprintf(sbuf, kMsg, "%s", say.c_str());
		if (rdma_post_send(id, nullptr, sbuf, kMsg, smr, 0))
			return fail("rdma_post_send", i);
		if ((got = rdma_get_send_comp(id, &wc)) <= 0 || wc.status)
			return comp_fail("send completion", i, got, wc);
	}
	return 0;
}

int server(const char *addr, const char *port, int n)
{
	rdma_addrinfo *res = getinfo(addr, port, true);
	rdma_cm_id *listen_id, *id;
	ibv_qp_init_attr attr;
	int i, ret = 1;

	if (!res)
		return 1;
	qp_attr(&attr);
	if (rdma_create_ep(&listen_id, res, nullptr, &attr)) {
		std::perror("rdma_create_ep");
		rdma_freeaddrinfo(res);
		return 1;
	}
	rdma_freeaddrinfo(res);
	if (rdma_listen(listen_id, 4)) {
		std::perror("rdma_listen");
		goto out;
	}
	std::printf("cm_cycles: listening\n");
	std::fflush(stdout);
	for (i = 0; i < n; i++) {
		char rbuf[kMsg] = {}, sbuf[kMsg] = {};
		ibv_mr *rmr = nullptr, *smr = nullptr;
		int err = 1;

		if (rdma_get_request(listen_id, &id)) {
			fail("rdma_get_request", i);
			goto out;
		}
		// The listener's QP attributes gave the new id its QP.
		if (!id->qp) {
			fail("no QP from rdma_get_request", i);
			rdma_destroy_ep(id);
			goto out;
		}
		rmr = rdma_reg_msgs(id, rbuf, kMsg);
		smr = rdma_reg_msgs(id, sbuf, kMsg);
		if (!rmr || !smr)
			fail("rdma_reg_msgs", i);
		else if (rdma_post_recv(id, nullptr, rbuf, kMsg, rmr))
			fail("rdma_post_recv", i);
		else if (rdma_accept(id, nullptr))
			fail("rdma_accept", i);
		else if (!(err = exchange(id, false, i, true, rbuf, sbuf, rmr, smr)))
			rdma_disconnect(id);
		if (smr)
			rdma_dereg_mr(smr);
		if (rmr)
			rdma_dereg_mr(rmr);
		rdma_destroy_ep(id);
		if (err)
			goto out;
	}
	std::printf("cm_cycles: %d cycles, %d messages checked\n", n, n);
	ret = 0;
out:
	rdma_destroy_ep(listen_id);
	return ret;
}

int client(const char *addr, const char *port, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		rdma_addrinfo *res = getinfo(addr, port, false);
		char rbuf[kMsg] = {}, sbuf[kMsg] = {};
		ibv_mr *rmr = nullptr, *smr = nullptr;
		ibv_qp_init_attr attr;
		rdma_cm_id *id;
		int err = 1;

		if (!res)
			return 1;
		qp_attr(&attr);
		if (rdma_create_ep(&id, res, nullptr, &attr)) {
			rdma_freeaddrinfo(res);
			return fail("rdma_create_ep", i);
		}
		rdma_freeaddrinfo(res);
		rmr = rdma_reg_msgs(id, rbuf, kMsg);
		smr = rdma_reg_msgs(id, sbuf, kMsg);
		if (!rmr || !smr)
			fail("rdma_reg_msgs", i);
		else if (rdma_post_recv(id, nullptr, rbuf, kMsg, rmr))
			fail("rdma_post_recv", i);
		else if (rdma_connect(id, nullptr))
			fail("rdma_connect", i);
		else
			err = exchange(id, true, i, true, rbuf, sbuf, rmr, smr) ||
			      wait_disconnect(id, i);
		if (smr)
			rdma_dereg_mr(smr);
		if (rmr)
			rdma_dereg_mr(rmr);
		rdma_destroy_ep(id);
		if (err)
			return 1;
	}
	std::printf("cm_cycles: %d cycles, %d messages checked\n", n, n);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	const char *addr = nullptr, *port = "7471";
	bool is_server = false;
	int n = 200, c;

	while ((c = getopt(argc, argv, "sb:c:p:n:")) != -1) {
		switch (c) {
		case 's':
			is_server = true;
			break;
		case 'b':
		case 'c':
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			n = std::atoi(optarg);
			break;
		default:
			std::fprintf(stderr,
				     "usage: %s -s -b ADDR | -c ADDR [-p PORT] [-n N]\n",
				     argv[0]);
			return 2;
		}
	}
	if (!addr || n <= 0) {
		std::fprintf(stderr, "cm_cycles: an address and N > 0 are needed\n");
		return 2;
	}
	return is_server ? server(addr, port, n) : client(addr, port, n);
}
