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
// "ack <i>", the client a last "fin <i>"; both check what they receive.
// The server disconnects on "fin", and the client waits for that before
// it tears down (see client_exchange: on a lossy link, a side that went
// first could destroy its QP while its peer still retransmits a message
// whose ACK was lost, and fail a correct peer). Prints
// "cm_cycles: N cycles, N messages checked" and exits 0 on success.

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <cstdint>
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
	attr->cap.max_send_wr = attr->cap.max_recv_wr = 2;
	attr->cap.max_send_sge = attr->cap.max_recv_sge = 1;
	attr->sq_sig_all = 1;
	attr->qp_type = IBV_QPT_RC;
}

int check_msg(const char *buf, uint32_t len, const std::string &want, int i)
{
	if (len == kMsg && !std::strncmp(buf, want.c_str(), kMsg))
		return 0;
	std::fprintf(stderr, "cm_cycles: cycle %d: got '%.*s' (%u bytes), want '%s'\n", i,
		     (int)kMsg, buf, len, want.c_str());
	return 1;
}

int send_msg(rdma_cm_id *id, char *sbuf, ibv_mr *smr, const std::string &say, int i)
{
	std::snprintf(sbuf, kMsg, "%s", say.c_str());
	if (rdma_post_send(id, nullptr, sbuf, kMsg, smr, 0))
		return fail("rdma_post_send", i);
	return 0;
}

int send_done(rdma_cm_id *id, int i)
{
	ibv_wc wc;
	int got = rdma_get_send_comp(id, &wc);
	return got <= 0 || wc.status ? comp_fail("send completion", i, got, wc) : 0;
}

int recv_done(rdma_cm_id *id, const char *buf, const std::string &want, int i)
{
	ibv_wc wc;
	int got = rdma_get_recv_comp(id, &wc);
	if (got <= 0 || wc.status)
		return comp_fail("recv completion", i, got, wc);
	return check_msg(buf, wc.byte_len, want, i);
}

// The messages of cycle @i on a connected id. Every RC send must be
// acknowledged before its QP goes, and the last one's ACK can always be
// lost after its receiver is done; so the client sends a last "fin"
// whose completion nobody waits for, and the server, which has waited
// for everything else, ends the connection (rdma_disconnect) on it:
//   client: "cycle i" (completes) -> receives "ack i" -> "fin i" ->
//           waits for the server's disconnect
//   server: receives "cycle i" -> "ack i" (completes) -> receives
//           "fin i" -> disconnects
int client_exchange(rdma_cm_id *id, int i, char *rbuf, char *sbuf, ibv_mr *smr)
{
	std::string n = std::to_string(i);
	return send_msg(id, sbuf, smr, "cycle " + n, i) || send_done(id, i) ||
	       recv_done(id, rbuf, "ack " + n, i) ||
	       send_msg(id, sbuf + kMsg, smr, "fin " + n, i) || wait_disconnect(id, i);
}

int server_exchange(rdma_cm_id *id, int i, char *rbuf, char *sbuf, ibv_mr *smr)
{
	std::string n = std::to_string(i);
	return recv_done(id, rbuf, "cycle " + n, i) ||
	       send_msg(id, sbuf, smr, "ack " + n, i) || send_done(id, i) ||
	       recv_done(id, rbuf + kMsg, "fin " + n, i);
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
		char rbuf[2 * kMsg] = {}, sbuf[2 * kMsg] = {};
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
		rmr = rdma_reg_msgs(id, rbuf, sizeof(rbuf));
		smr = rdma_reg_msgs(id, sbuf, sizeof(sbuf));
		if (!rmr || !smr)
			fail("rdma_reg_msgs", i);
		else if (rdma_post_recv(id, nullptr, rbuf, kMsg, rmr) ||
			 rdma_post_recv(id, nullptr, rbuf + kMsg, kMsg, rmr))
			fail("rdma_post_recv", i);
		else if (rdma_accept(id, nullptr))
			fail("rdma_accept", i);
		else if (!(err = server_exchange(id, i, rbuf, sbuf, smr)))
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
		char rbuf[kMsg] = {}, sbuf[2 * kMsg] = {};
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
		rmr = rdma_reg_msgs(id, rbuf, sizeof(rbuf));
		smr = rdma_reg_msgs(id, sbuf, sizeof(sbuf));
		if (!rmr || !smr)
			fail("rdma_reg_msgs", i);
		else if (rdma_post_recv(id, nullptr, rbuf, kMsg, rmr))
			fail("rdma_post_recv", i);
		else if (rdma_connect(id, nullptr))
			fail("rdma_connect", i);
		else
			err = client_exchange(id, i, rbuf, sbuf, smr);
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
