// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_qpalloc - create big QPs on a device until N exist or creation
// fails, then hold them until stdin closes: the kernel memory a process's
// verbs allocate, seen from its memory cgroup (tests/vm/51-memcg.sh).
//
//   sroce_qpalloc -d DEV -n N [-w WR] [-s SGE]
//
// Prints one line per QP, "qp I kernel_bytes B" with B what the QP's rings
// and the kernel's private copy of its send ring take at least (from the
// ring geometry the kernel reported), then "created N" or "failed at I:
// errno E (name)", and waits for EOF on stdin before it destroys them.
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vector>

#include <infiniband/verbs.h>

#include "sroce.hpp"	// the provider's QP: the ring geometry the kernel gave
#include "verbs_util.hpp"

int main(int argc, char **argv)
{
	const char *name = nullptr;
	int n = 1, wr = 4096, sge = 32, c;

	while ((c = getopt(argc, argv, "d:n:w:s:")) != -1) {
		switch (c) {
		case 'd': name = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'w': wr = atoi(optarg); break;
		case 's': sge = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!name)
		return 2;
	setvbuf(stdout, nullptr, _IOLBF, 0);
	ibv_context *ctx = open_device_by_name(name);
	ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
	ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, nullptr, nullptr, 0) : nullptr;
	if (!cq) {
		printf("set-up failed: %s\n", strerror(errno));
		return 1;
	}
	std::vector<ibv_qp *> qps;
	for (int i = 0; i < n; i++) {
		ibv_qp_init_attr ia = {};
		ia.send_cq = cq;
		ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = wr;
		ia.cap.max_recv_wr = wr;
		ia.cap.max_send_sge = sge;
		ia.cap.max_recv_sge = sge;
		ibv_qp *qp = ibv_create_qp(pd, &ia);
		if (!qp) {
			int e = errno;
			printf("failed at %d: errno %d (%s)\n", i, e, strerror(e));
			break;
		}
		auto *q = reinterpret_cast<sroce::qp *>(qp);
		unsigned long long bytes = 2ULL * q->sq.entries() * q->sq.stride() +
					   (unsigned long long)q->rq.entries() * q->rq.stride();
		printf("qp %d kernel_bytes %llu\n", i, bytes);
		qps.push_back(qp);
	}
	if ((int)qps.size() == n)
		printf("created %d\n", n);
	// Hold them while the caller looks at the cgroup.
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	for (ibv_qp *qp : qps)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
