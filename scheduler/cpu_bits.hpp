// Sets of CPU slots, a bit each (shm::CpuBits): the segment's unheld CPUs by
// state (Header::free_cpus, idle_cpus and lent_cpus), which CpuTable keeps
// and Policy searches instead of every CPU slot; and the parked CPUs
// (Header::parked, a shm::AtomicCpuBits), which threads change lock-free.
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

// Calls `visit(c)` for each CPU slot c below `count` in a set, in index
// order, until it returns true; returns that c, or kNone. It reads
// count / 64 words, word i as `word(i)` returns it, and visits the set
// bits alone: a search costs the members of the set, not the slots of the
// node. `visit` may take c out of the set (each word is read once, before
// its bits are visited). The find_in() overloads below name the words.
template <class Word, class Visit>
int32_t find_in_words(int32_t count, Word word, Visit visit) {
    for (int32_t i = 0; i * 64 < count; ++i) {
        for (uint64_t w = word(i); w != 0; w &= w - 1) {
            const int32_t c = i * 64 + std::countr_zero(w);
            if (c >= count) return shm::kNone;
            if (visit(c)) return c;
        }
    }
    return shm::kNone;
}
template <class Visit>
int32_t find_in(const uint64_t* words, int32_t count, Visit visit) {
    return find_in_words(
        count, [&](int32_t i) { return words[i]; }, visit);
}
template <class Visit>
int32_t find_in(const shm::CpuBits& bits, int32_t count, Visit visit) {
    return find_in(bits.words, count, visit);
}
// find_in() over a set others change meanwhile: each word is read once, so
// a CPU that joins the set during the search may be missed, and one that
// left it visited.
template <class Visit>
int32_t find_in(const shm::AtomicCpuBits& bits, int32_t count, Visit visit) {
    return find_in_words(
        count, [&](int32_t i) { return bits.words[i].load(std::memory_order_seq_cst); }, visit);
}

// ---- a set changed without the lock (shm::AtomicCpuBits) ------------
// seq_cst, all three: a submitter that reads Header::parked_cpus, and a
// claimer that then searches the set, pair with a parker's mark and count
// (CpuTable::park() says how).
// The word that holds CPU slot c.
inline std::atomic<uint64_t>& word_of(shm::AtomicCpuBits& bits, int32_t c) {
    return bits.words[c / 64];
}
// Puts c in `bits`; true if it was not in it.
inline bool mark(shm::AtomicCpuBits& bits, int32_t c) {
    const uint64_t bit = uint64_t(1) << (c % 64);
    return (word_of(bits, c).fetch_or(bit, std::memory_order_seq_cst) & bit) == 0;
}
// Takes c out of `bits`; true if it was in it.
inline bool unmark(shm::AtomicCpuBits& bits, int32_t c) {
    const uint64_t bit = uint64_t(1) << (c % 64);
    return (word_of(bits, c).fetch_and(~bit, std::memory_order_seq_cst) & bit) != 0;
}
inline bool contains(const shm::AtomicCpuBits& bits, int32_t c) {
    return (bits.words[c / 64].load(std::memory_order_seq_cst) >> (c % 64)) & 1;
}
// Empties the words that hold the CPU slots below `count`.
inline void clear_below(shm::AtomicCpuBits& bits, int32_t count) {
    for (int32_t c = 0; c < count; c += 64)
        word_of(bits, c).store(0, std::memory_order_seq_cst);
}

// find_in() over the CPUs in both `a` and `b`.
template <class Visit>
int32_t find_in_both(const shm::CpuBits& a, const shm::CpuBits& b, int32_t count, Visit visit) {
    return find_in_words(
        count, [&](int32_t i) { return a.words[i] & b.words[i]; }, visit);
}

} // namespace coexec::scheduler
