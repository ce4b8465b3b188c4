// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// ring.hpp - the shared rings of uapi/sroce-abi.h, seen from userspace.
//
// One mapping per queue: struct sroce_ring_hdr at offset 0, then
// `entries` elements of `stride` bytes at SROCE_RING_DATA_OFFSET, both
// powers of two; prod and cons are free-running u32 counters and element
// i lives at (i & (entries - 1)).  Userspace produces into SQ/RQ/SRQ
// rings and consumes from CQ rings, so one template serves both roles:
//
//   producer_ring (SQ, RQ, SRQ)    consumer_ring (CQ)
//     free_slots()                   available()
//     slot(n)                        elem(n) / peek()
//     publish(n)                     consume(n)
//     needs_kick()
//
// The header is shared with the kernel, so it holds plain u32s and every
// access goes through std::atomic_ref (lock-free, the same instructions
// as the kernel's smp_load_acquire/smp_store_release): no std::atomic
// object lives in the mapping.  The side that owns an index keeps a
// private shadow of it and only ever stores it; the other side's index is
// loaded with acquire and believed only if it is at most `entries` away
// in the right direction, so a buggy or hostile kernel can make a ring
// look full or empty but never make us index outside it or overwrite
// entries it has not consumed.  Element addresses are always masked, so
// no index value can reach outside the mapping.
//
// No allocation, no locks, no exceptions: the QP/CQ objects that own a
// ring serialise access to it.
#ifndef SROCE_RING_HPP
#define SROCE_RING_HPP

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <bit>

#include <sroce-abi.h>

namespace sroce {

static_assert(sizeof(struct sroce_ring_hdr) == SROCE_RING_DATA_OFFSET);
static_assert(offsetof(struct sroce_ring_hdr, prod) == 0);
static_assert(offsetof(struct sroce_ring_hdr, cons) == 64);
static_assert(offsetof(struct sroce_ring_hdr, flags) == 128);
// The kernel uses no lock either: the index accesses must be single
// lock-free instructions on a naturally aligned u32.
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free);
static_assert(std::atomic_ref<uint32_t>::required_alignment == alignof(__u32));

// ---- geometry ----------------------------------------------------------------

inline constexpr uint32_t kRingMinStride = 64;
// u32 indices tell "entries ahead" from garbage only while entries fits
// in half the index space; 2^31 is also the largest u32 power of two.
inline constexpr uint32_t kRingMaxEntries = 1u << 31;

constexpr bool is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

// Smallest power of two >= v (1 for 0 and 1); 0 when it does not fit in
// a u32 (v > 2^31), so callers turn an impossible request into an error.
constexpr uint32_t round_up_pow2(uint32_t v)
{
	if (v <= 1)
		return 1;
	if (v > kRingMaxEntries)
		return 0;
	return uint32_t{1} << (32 - std::countl_zero(v - 1));
}

// page_size must be a power of two (sysconf(_SC_PAGESIZE) is).
constexpr uint64_t page_align(uint64_t len, uint64_t page_size)
{
	return (len + page_size - 1) & ~(page_size - 1);
}

// Bytes the header plus elements occupy, unrounded.  At most
// 192 + 2^31 * 2^31: no u64 overflow for any u32 power-of-two inputs.
constexpr uint64_t ring_bytes(uint32_t entries, uint32_t stride)
{
	return SROCE_RING_DATA_OFFSET + uint64_t{entries} * stride;
}

// The mmap length of a ring: page-aligned header + elements.
constexpr uint64_t ring_mapping_length(uint32_t entries, uint32_t stride,
				       uint64_t page_size)
{
	return page_align(ring_bytes(entries, stride), page_size);
}

// Whether a ring the kernel described (struct sroce_ring_info) can be
// indexed safely: power-of-two entries and stride, the stride at least
// min_stride (the size of the element we read or write), and a mapping
// that covers every element.
constexpr bool ring_geometry_ok(uint32_t entries, uint32_t stride,
				uint64_t mapping_length,
				uint32_t min_stride = kRingMinStride)
{
	return is_pow2(entries) && entries <= kRingMaxEntries &&
	       is_pow2(stride) && stride >= min_stride &&
	       stride >= kRingMinStride &&
	       mapping_length >= ring_bytes(entries, stride);
}

// ---- the ring ------------------------------------------------------------------

enum class ring_role {
	producer,	// we own prod: SQ, RQ, SRQ
	consumer,	// we own cons: CQ
};

template <ring_role Role>
class shared_ring {
public:
	static constexpr bool kProducer = Role == ring_role::producer;

	constexpr shared_ring() = default;

	// Attach to a mapped ring.  Seeds our shadow from the index we own
	// in the header (the kernel initialises both indices; it may start
	// them anywhere).  Returns false, leaving the ring detached, if the
	// geometry does not pass ring_geometry_ok() or the mapping is not
	// aligned for the header.
	bool attach(void *mapping, uint64_t mapping_length, uint32_t entries,
		    uint32_t stride)
	{
		*this = shared_ring();
		if (!mapping ||
		    reinterpret_cast<uintptr_t>(mapping) % kRingMinStride != 0 ||
		    !ring_geometry_ok(entries, stride, mapping_length))
			return false;
		hdr_ = static_cast<struct sroce_ring_hdr *>(mapping);
		data_ = static_cast<unsigned char *>(mapping) +
			SROCE_RING_DATA_OFFSET;
		mask_ = entries - 1;
		stride_shift_ = static_cast<uint32_t>(std::countr_zero(stride));
		own_ = load_relaxed(kProducer ? hdr_->prod : hdr_->cons);
		return true;
	}

	bool attached() const { return hdr_ != nullptr; }
	uint32_t entries() const { return mask_ + 1; }
	uint32_t stride() const { return uint32_t{1} << stride_shift_; }
	// Our shadow of the index we own (prod for a producer, cons for a
	// consumer): what we last published.
	uint32_t index() const { return own_; }
	// Kernel-owned flags (SROCE_RING_F_*), a plain snapshot.
	uint32_t flags() const { return load_relaxed(hdr_->flags); }

	// ---- producer: SQ, RQ, SRQ -------------------------------------------

	// Slots we may fill before the next publish.  0 when the ring is
	// full - or when cons is not within `entries` behind our prod,
	// which only a broken kernel writes: then nothing is overwritten.
	uint32_t free_slots() const
		requires kProducer
	{
		const uint32_t cons = load_acquire(hdr_->cons);
		const uint32_t used = own_ - cons;
		if (used > mask_ + 1)
			return 0;
		return mask_ + 1 - used;
	}

	// Address of the n-th slot past prod.  Only n < free_slots() may be
	// written; any n gives an address inside the mapping.
	void *slot(uint32_t n = 0) const
		requires kProducer
	{
		return element(own_ + n);
	}

	// Hand n filled slots to the kernel: the release store orders the
	// slot contents before the new prod.
	void publish(uint32_t n = 1)
		requires kProducer
	{
		own_ += n;
		store_release(hdr_->prod, own_);
	}

	// After publish(): must the kernel be woken by the doorbell call?
	// The full fence pairs with the kernel's "set NEED_KICK; smp_mb();
	// re-read prod": either the kernel sees our prod or we see its flag.
	bool needs_kick() const
		requires kProducer
	{
		std::atomic_thread_fence(std::memory_order_seq_cst);
		return load_relaxed(hdr_->flags) & SROCE_RING_F_NEED_KICK;
	}

	// ---- consumer: CQ ------------------------------------------------------

	// Elements the kernel has published and we have not consumed.  0
	// when prod is not within `entries` ahead of our cons (a broken
	// kernel): nothing stale or out of bounds is read.
	uint32_t available() const
		requires(!kProducer)
	{
		const uint32_t prod = load_acquire(hdr_->prod);
		const uint32_t avail = prod - own_;
		if (avail > mask_ + 1)
			return 0;
		return avail;
	}

	// The n-th unconsumed element; valid to read for n < available().
	const void *elem(uint32_t n = 0) const
		requires(!kProducer)
	{
		return element(own_ + n);
	}

	// The next element, or nullptr when there is none.
	const void *peek() const
		requires(!kProducer)
	{
		return available() ? elem(0) : nullptr;
	}

	// Give n read elements back: the release store orders our reads of
	// them before the kernel may overwrite them.
	void consume(uint32_t n = 1)
		requires(!kProducer)
	{
		own_ += n;
		store_release(hdr_->cons, own_);
	}

private:
	unsigned char *element(uint32_t index) const
	{
		return data_ + (static_cast<size_t>(index & mask_) << stride_shift_);
	}

	static uint32_t load_acquire(__u32 &v)
	{
		return std::atomic_ref<uint32_t>(v).load(std::memory_order_acquire);
	}
	static uint32_t load_relaxed(__u32 &v)
	{
		return std::atomic_ref<uint32_t>(v).load(std::memory_order_relaxed);
	}
	static void store_release(__u32 &v, uint32_t value)
	{
		std::atomic_ref<uint32_t>(v).store(value, std::memory_order_release);
	}

	struct sroce_ring_hdr *hdr_ = nullptr;
	unsigned char *data_ = nullptr;
	uint32_t mask_ = 0;
	uint32_t stride_shift_ = 0;
	uint32_t own_ = 0;	// shadow of the index this side owns
};

using producer_ring = shared_ring<ring_role::producer>;	// SQ, RQ, SRQ
using consumer_ring = shared_ring<ring_role::consumer>;	// CQ

} // namespace sroce

#endif // SROCE_RING_HPP
