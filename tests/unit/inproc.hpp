// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// In-process tests: the real libibverbs 44 loads the built provider and
// talks to fake_uverbs.cpp (LD_PRELOADed by "make unit") as its kernel.
// The same process plays the kernel's side through fake_uverbs' extern
// "C" hooks: it produces CQEs into the mapped ring, reads the indices,
// corrupts them.  inproc_main.cpp builds the fake sysfs tree (one device,
// sroce0) and points libibverbs at it before any test runs.
#ifndef SROCE_INPROC_HPP
#define SROCE_INPROC_HPP

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <sroce-abi.h>

namespace inproc {

// fake_uverbs.cpp's kernel-side hooks (resolved by inproc_main.cpp).
struct fake_api {
	int (*cq_push)(uint32_t handle, const void *cqe);
	int (*cq_state)(uint32_t handle, uint32_t *prod, uint32_t *cons,
			uint32_t *entries);
	int (*cq_arms)(uint32_t handle, unsigned *next, unsigned *solicited);
	int (*cq_poke_prod)(uint32_t handle, uint32_t value);
	int (*live_maps)(void);
	int (*qp_ring)(uint32_t handle, int which, void **kmap, uint32_t *entries,
		       uint32_t *stride);
	int (*qp_doorbells)(uint32_t handle, unsigned *send, unsigned *recv);
	int (*srq_ring)(uint32_t handle, void **kmap, uint32_t *entries,
			uint32_t *stride);
};
extern fake_api fake;

// FAKE_UVERBS_LOG, set by main.
extern std::string g_log_path;
std::string read_log_from(size_t offset);
size_t log_size();

// A CQE with every field derived from wr_id, so a mix-up shows.
inline struct sroce_cqe make_cqe(uint64_t wr_id, uint8_t status = IBV_WC_SUCCESS,
				 uint8_t opcode = IBV_WC_RECV, uint16_t wc_flags = 0)
{
	struct sroce_cqe c;
	memset(&c, 0, sizeof(c));
	c.wr_id = wr_id;
	c.status = status;
	c.opcode = opcode;
	c.wc_flags = wc_flags;
	c.byte_len = static_cast<uint32_t>(wr_id * 3 + 1);
	c.qp_num = static_cast<uint32_t>(0x100 + (wr_id & 0xfff));
	c.src_qp = static_cast<uint32_t>(0x200 + (wr_id & 0xfff));
	c.ex.imm_data = htobe32(static_cast<uint32_t>(0xab000000u | (wr_id & 0xffff)));
	c.vendor_err = status == IBV_WC_SUCCESS ? 0 : 0x77;
	c.pkey_index = static_cast<uint16_t>(wr_id & 0x7f);
	c.slid = static_cast<uint16_t>(0x3000 + (wr_id & 0xff));
	c.sl = static_cast<uint8_t>(wr_id & 0xf);
	c.dlid_path_bits = static_cast<uint8_t>(wr_id & 0x7f);
	return c;
}

// A QP/SRQ ring seen from the kernel's side (fake.qp_ring /
// fake.srq_ring give its mapping): the indices with the kernel's memory
// order, and the slots.
struct kring {
	struct sroce_ring_hdr *hdr = nullptr;
	unsigned char *data = nullptr;
	uint32_t entries = 0, stride = 0;

	uint32_t prod() const { return __atomic_load_n(&hdr->prod, __ATOMIC_ACQUIRE); }
	uint32_t cons() const { return __atomic_load_n(&hdr->cons, __ATOMIC_ACQUIRE); }
	void set_cons(uint32_t v) { __atomic_store_n(&hdr->cons, v, __ATOMIC_RELEASE); }
	void set_flags(uint32_t v) { __atomic_store_n(&hdr->flags, v, __ATOMIC_SEQ_CST); }
	const unsigned char *slot(uint32_t i) const
	{
		return data + static_cast<size_t>(i & (entries - 1)) * stride;
	}
	const struct sroce_send_wqe *send(uint32_t i) const
	{
		return reinterpret_cast<const struct sroce_send_wqe *>(slot(i));
	}
	const struct sroce_recv_wqe *recv(uint32_t i) const
	{
		return reinterpret_cast<const struct sroce_recv_wqe *>(slot(i));
	}
	const struct sroce_sge *sge(uint32_t i, size_t hdr_len, unsigned n) const
	{
		return reinterpret_cast<const struct sroce_sge *>(slot(i) + hdr_len) + n;
	}
};

inline kring make_kring(void *kmap, uint32_t entries, uint32_t stride)
{
	kring r;
	r.hdr = static_cast<struct sroce_ring_hdr *>(kmap);
	r.data = static_cast<unsigned char *>(kmap) + SROCE_RING_DATA_OFFSET;
	r.entries = entries;
	r.stride = stride;
	return r;
}

// Runs fn on a detached thread; the flag turns true when fn returns.  A
// thread that hangs (on a lock the provider never released) is left
// behind, so the test fails instead of hanging.
inline std::shared_ptr<std::atomic<bool>> start_detached(std::function<void()> fn)
{
	auto done = std::make_shared<std::atomic<bool>>(false);
	std::thread([fn, done] {
		fn();
		done->store(true);
	}).detach();
	return done;
}

inline bool wait_flag(const std::shared_ptr<std::atomic<bool>> &done, int ms)
{
	const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
	while (!done->load()) {
		if (std::chrono::steady_clock::now() > end)
			return false;
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	return true;
}

// true if fn returned within ms
inline bool finishes_within(std::function<void()> fn, int ms)
{
	return wait_flag(start_detached(std::move(fn)), ms);
}

// Sets an environment variable (a fake_uverbs knob) for one scope.
class scoped_env {
public:
	scoped_env(const char *name, const char *value) : name_(name)
	{
		setenv(name, value, 1);
	}
	~scoped_env() { unsetenv(name_); }
	scoped_env(const scoped_env &) = delete;
	scoped_env &operator=(const scoped_env &) = delete;

private:
	const char *name_;
};

// An open sroce0 with a PD; the log is read from where the test started.
class Verbs : public ::testing::Test {
protected:
	void SetUp() override;
	void TearDown() override;

	// What the fake kernel logged since SetUp (or since mark()).
	std::string log() const { return read_log_from(log_mark_); }
	void mark() { log_mark_ = log_size(); }
	// Ring mappings the provider holds now, less those before the test.
	int live_maps() const { return fake.live_maps() - maps_at_start_; }

	struct ibv_context *ctx_ = nullptr;
	struct ibv_pd *pd_ = nullptr;
	size_t log_mark_ = 0;
	int maps_at_start_ = 0;	// ring mappings before the test
};

inline bool contains(const std::string &hay, const std::string &needle)
{
	return hay.find(needle) != std::string::npos;
}

// "%p"-free hex, the way the fake logs addresses.
inline std::string hex(uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
	return buf;
}

} // namespace inproc

#endif // SROCE_INPROC_HPP
