// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// Memory regions through libibverbs: what REG_MR / REREG_MR / DEREG_MR
// carry to the kernel (start, length, IOVA, PD handle, access, flags),
// what comes back (handle, keys), what libibverbs and the provider keep
// in the ibv_mr / verbs_mr, and the kernel's errnos reaching the caller.
#include <stdlib.h>
#include <sys/mman.h>

#include "abi/private_abi.h"	// struct verbs_mr: the provider-private view
#include "inproc.hpp"

using namespace inproc;

namespace {

class Mr : public Verbs {
protected:
	void SetUp() override
	{
		Verbs::SetUp();
		buf_ = static_cast<char *>(aligned_alloc(4096, kLen));
		ASSERT_TRUE(buf_);
		memset(buf_, 0, kLen);
	}

	void TearDown() override
	{
		if (mr_) {
			EXPECT_EQ(ibv_dereg_mr(mr_), 0);
		}
		free(buf_);
		Verbs::TearDown();
	}

	static constexpr size_t kLen = 1 << 16;
	char *buf_ = nullptr;
	struct ibv_mr *mr_ = nullptr;
};

std::string field(const std::string &line, const std::string &name)
{
	size_t p = line.find(" " + name + "=");
	if (p == std::string::npos)
		return "";
	p += name.size() + 2;
	return line.substr(p, line.find(' ', p) - p);
}

// The last log line starting with cmd.
std::string last_line(const std::string &log, const std::string &cmd)
{
	const std::string all = "\n" + log;
	const size_t p = all.rfind("\n" + cmd + " ");
	if (p == std::string::npos)
		return "";
	return all.substr(p + 1, all.find('\n', p + 1) - p - 1);
}

TEST_F(Mr, RegMrEncodesTheCommand)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	mr_ = ibv_reg_mr(pd_, buf_ + 100, 5000, access);
	ASSERT_TRUE(mr_) << strerror(errno);
	const std::string l = last_line(log(), "REG_MR");
	// hdr + 40-byte core, 12-byte core response, no driver data
	EXPECT_EQ(l.rfind("REG_MR in=40 out=12 udata_in=0 udata_out=0 ", 0), 0u) << l;
	EXPECT_EQ(field(l, "start"), hex(reinterpret_cast<uintptr_t>(buf_ + 100))) << l;
	EXPECT_EQ(field(l, "length"), "5000") << l;
	EXPECT_EQ(field(l, "hca_va"), hex(reinterpret_cast<uintptr_t>(buf_ + 100))) << l;
	EXPECT_EQ(field(l, "pd"), std::to_string(pd_->handle)) << l;
	EXPECT_EQ(field(l, "access"), hex(access)) << l;
	EXPECT_EQ(field(l, "ret"), "0") << l;

	// What came back, and what libibverbs filled in.
	EXPECT_EQ(field(l, "handle"), std::to_string(mr_->handle)) << l;
	EXPECT_EQ(field(l, "key"), hex(mr_->lkey)) << l;
	EXPECT_EQ(mr_->rkey, mr_->lkey);
	EXPECT_EQ(mr_->addr, buf_ + 100);
	EXPECT_EQ(mr_->length, 5000u);
	EXPECT_EQ(mr_->pd, pd_);
	EXPECT_EQ(mr_->context, ctx_);
	const struct verbs_mr *vmr = verbs_get_mr(mr_);
	EXPECT_EQ(vmr->mr_type, IBV_MR_TYPE_MR);
	EXPECT_EQ(vmr->access, access);
}

TEST_F(Mr, RegMrIovaIsSentAsIs)
{
	const uint64_t iova = 0x7000000000ull + 0x123;
	mr_ = ibv_reg_mr_iova(pd_, buf_ + 0x123, 64, iova, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_TRUE(mr_) << strerror(errno);
	const std::string l = last_line(log(), "REG_MR");
	EXPECT_EQ(field(l, "hca_va"), hex(iova)) << l;
	EXPECT_EQ(field(l, "start"), hex(reinterpret_cast<uintptr_t>(buf_ + 0x123))) << l;
}

TEST_F(Mr, KernelErrorsComeBackAsErrno)
{
	struct {
		void *addr;
		size_t len;
		int access;
		int want;
		const char *what;
	} cases[] = {
		{buf_, 0, IBV_ACCESS_LOCAL_WRITE, EINVAL, "zero length"},
		{buf_, kLen, IBV_ACCESS_REMOTE_WRITE, EINVAL, "remote write without local"},
		{buf_, kLen, IBV_ACCESS_REMOTE_ATOMIC, EINVAL, "remote atomic without local"},
		{buf_, kLen, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED, EOPNOTSUPP,
		 "zero based"},
		{buf_, kLen, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, EOPNOTSUPP,
		 "on demand"},
	};
	for (const auto &c : cases) {
		errno = 0;
		struct ibv_mr *m = ibv_reg_mr(pd_, c.addr, c.len, c.access);
		EXPECT_FALSE(m) << c.what;
		EXPECT_EQ(errno, c.want) << c.what;
		if (m)
			ibv_dereg_mr(m);
	}
	void *hole = mmap(nullptr, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(hole, MAP_FAILED);
	munmap(hole, 1 << 16);
	errno = 0;
	EXPECT_FALSE(ibv_reg_mr(pd_, hole, 1 << 16, IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(errno, EFAULT);
}

TEST_F(Mr, ReregChangeAccess)
{
	mr_ = ibv_reg_mr(pd_, buf_, kLen, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_TRUE(mr_);
	const uint32_t handle = mr_->handle, old_key = mr_->lkey;
	mark();
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, access),
		  0);
	const std::string l = last_line(log(), "REREG_MR");
	// hdr + 48-byte core, 8-byte core response
	EXPECT_EQ(l.rfind("REREG_MR in=48 out=8 udata_in=0 udata_out=0 ", 0), 0u) << l;
	EXPECT_EQ(field(l, "handle"), std::to_string(handle)) << l;
	EXPECT_EQ(field(l, "flags"), "0x4") << l;
	EXPECT_EQ(field(l, "pd"), "0") << l;		// only sent with CHANGE_PD
	EXPECT_EQ(field(l, "access"), hex(access)) << l;
	// The kernel changed the region in place: same keys, same handle.
	EXPECT_EQ(field(l, "key"), hex(mr_->lkey)) << l;
	EXPECT_EQ(mr_->lkey, old_key);
	EXPECT_EQ(mr_->rkey, mr_->lkey);
	EXPECT_EQ(mr_->handle, handle);
	EXPECT_EQ(mr_->addr, buf_);
	EXPECT_EQ(mr_->length, kLen);
	EXPECT_EQ(verbs_get_mr(mr_)->access, access);
}

TEST_F(Mr, ReregChangeTranslation)
{
	mr_ = ibv_reg_mr(pd_, buf_, kLen, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_TRUE(mr_);
	const uint32_t old_key = mr_->lkey;
	ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, buf_ + 4096 + 8,
			       8192, 0),
		  0);
	const std::string l = last_line(log(), "REREG_MR");
	EXPECT_EQ(field(l, "flags"), "0x1") << l;
	EXPECT_EQ(field(l, "start"), hex(reinterpret_cast<uintptr_t>(buf_ + 4096 + 8))) << l;
	EXPECT_EQ(field(l, "hca_va"), field(l, "start")) << l;	// IOVA = address
	EXPECT_EQ(field(l, "length"), "8192") << l;
	EXPECT_EQ(mr_->lkey, old_key);
	EXPECT_EQ(mr_->addr, buf_ + 4096 + 8);	// updated by libibverbs
	EXPECT_EQ(mr_->length, 8192u);
	EXPECT_EQ(verbs_get_mr(mr_)->access, IBV_ACCESS_LOCAL_WRITE);
}

TEST_F(Mr, ReregChangePd)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx_);
	ASSERT_TRUE(pd2);
	mr_ = ibv_reg_mr(pd_, buf_, kLen, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_TRUE(mr_);
	ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0), 0);
	const std::string l = last_line(log(), "REREG_MR");
	EXPECT_EQ(field(l, "flags"), "0x2") << l;
	EXPECT_EQ(field(l, "pd"), std::to_string(pd2->handle)) << l;
	EXPECT_EQ(mr_->pd, pd2);
	// the old PD is free now, the new one is busy
	EXPECT_EQ(ibv_dealloc_pd(pd2), EBUSY);
	EXPECT_EQ(ibv_dereg_mr(mr_), 0);
	mr_ = nullptr;
	EXPECT_EQ(ibv_dealloc_pd(pd2), 0);
}

TEST_F(Mr, FailedRereregLeavesTheRegionAlone)
{
	mr_ = ibv_reg_mr(pd_, buf_, kLen, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_TRUE(mr_);
	const uint32_t key = mr_->lkey;
	errno = 0;
	EXPECT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			       IBV_ACCESS_REMOTE_WRITE),
		  IBV_REREG_MR_ERR_CMD);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(mr_->lkey, key);
	EXPECT_EQ(verbs_get_mr(mr_)->access, IBV_ACCESS_LOCAL_WRITE);
	// and it still deregisters (TearDown)
}

TEST_F(Mr, DeregSendsTheHandle)
{
	mr_ = ibv_reg_mr(pd_, buf_, kLen, 0);
	ASSERT_TRUE(mr_);
	const uint32_t handle = mr_->handle;
	ASSERT_EQ(ibv_dereg_mr(mr_), 0);
	mr_ = nullptr;
	const std::string l = last_line(log(), "DEREG_MR");
	EXPECT_EQ(l, "DEREG_MR in=4 out=0 udata_in=0 udata_out=0 handle=" +
			     std::to_string(handle) + " ret=0");
}

TEST_F(Mr, ChurnLeavesNothing)
{
	for (int i = 0; i < 500; i++) {
		size_t off = (i * 97) % 4096, len = 1 + (i * 4099) % (kLen - off);
		struct ibv_mr *m = ibv_reg_mr(pd_, buf_ + off, len, IBV_ACCESS_LOCAL_WRITE);
		ASSERT_TRUE(m) << i << ": " << strerror(errno);
		ASSERT_EQ(ibv_dereg_mr(m), 0) << i;
	}
	// TearDown checks live_mrs=0 at close
}

} // namespace
