// Sets of CPU slots, a bit each (shm::CpuBits): the segment's unheld CPUs by
// state (Header::free_cpus, idle_cpus and lent_cpus), which CpuTable keeps
// and Policy searches instead of every CPU slot.
#pragma once

#include "shm/layout.hpp"

#include <bit>
#include <cstdint>

namespace coexec::scheduler {

// On a set's words: a shm::CpuBits's, or a row of Segment::proc_cpus.
inline bool contains(const uint64_t* words, int32_t c) {
    return (words[c / 64] >> (c % 64)) & 1;
}
inline void assign(uint64_t* words, int32_t c, bool in) {
    const uint64_t bit = uint64_t(1) << (c % 64);
    uint64_t& word = words[c / 64];
    word = in ? word | bit : word & ~bit;
}

inline bool contains(const shm::CpuBits& bits, int32_t c) {
    return contains(bits.words, c);
}
inline void assign(shm::CpuBits& bits, int32_t c, bool in) {
    assign(bits.words, c, in);
}
inline void clear(shm::CpuBits& bits) {
    for (uint64_t& w : bits.words)
        w = 0;
}
// Takes every CPU slot below `count` out of `bits`, writing only the words
// that hold them.
inline void clear_below(shm::CpuBits& bits, int32_t count) {
    for (int32_t i = 0; i * 64 < count; ++i) {
        uint64_t& w = bits.words[i];
        w = 0;
    }
}

// Calls `visit(c)` for each CPU slot c below `count` in `bits`, in index
// order, until it returns true; returns that c, or kNone. It reads
// count / 64 words and visits the set bits alone: a search costs the
// members of the set, not the slots of the node. `visit` may take c out of
// the set (each word is read once, before its bits are visited).
template <class Visit>
int32_t find_in(const uint64_t* words, int32_t count, Visit visit) {
    for (int32_t i = 0; i * 64 < count; ++i) {
        for (uint64_t w = words[i]; w != 0; w &= w - 1) {
            const int32_t c = i * 64 + std::countr_zero(w);
            if (c >= count) return shm::kNone;
            if (visit(c)) return c;
        }
    }
    return shm::kNone;
}
template <class Visit>
int32_t find_in(const shm::CpuBits& bits, int32_t count, Visit visit) {
    return find_in(bits.words, count, visit);
}

// find_in() over the CPUs in both `a` and `b`.
template <class Visit>
int32_t find_in_both(const shm::CpuBits& a, const shm::CpuBits& b, int32_t count, Visit visit) {
    for (int32_t i = 0; i * 64 < count; ++i) {
        for (uint64_t w = a.words[i] & b.words[i]; w != 0; w &= w - 1) {
            const int32_t c = i * 64 + std::countr_zero(w);
            if (c >= count) return shm::kNone;
            if (visit(c)) return c;
        }
    }
    return shm::kNone;
}

} // namespace coexec::scheduler
