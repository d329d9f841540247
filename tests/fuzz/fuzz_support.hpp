// Helpers shared by the libFuzzer targets.
#pragma once

#include "config/config.hpp"
#include "shm/layout.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace coexec::fuzz {

// Stops the run with a message: libFuzzer records the input as a crash.
[[noreturn]] inline void fail(const std::string& why) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", why.c_str());
    std::abort();
}

// One Segment-sized buffer per process, reused by every input (6.5 MiB:
// allocating it per input would dominate the run time).
// Room for this many CPU slots after the fixed part.
inline constexpr int32_t kScratchCpus = 64;
inline constexpr size_t kScratchSize = shm::segment_layout(kScratchCpus).total;

inline shm::Segment& scratch_segment() {
    static shm::Segment* segment = static_cast<shm::Segment*>(std::aligned_alloc(64, kScratchSize));
    return *segment;
}

// Fills the whole segment with `data` repeated, so that every field of
// every slot, not only the header, holds fuzzer-chosen bytes. An empty
// input gives an all-zero segment.
inline shm::Segment& segment_from(const uint8_t* data, size_t size) {
    shm::Segment& s = scratch_segment();
    auto* bytes = reinterpret_cast<unsigned char*>(static_cast<void*>(&s));
    if (size == 0) {
        std::memset(bytes, 0, kScratchSize);
        return s;
    }
    size_t filled = std::min(size, kScratchSize);
    std::memcpy(bytes, data, filled);
    // Doubling copies: log(kScratchSize / size) memcpy calls.
    while (filled < kScratchSize) {
        size_t n = std::min(filled, kScratchSize - filled);
        std::memcpy(bytes + filled, bytes, n);
        filled += n;
    }
    // A real mapping is as large as its header's max_cpus says (every
    // opener checks); this one has room for kScratchCpus. A claim of more
    // that is in range becomes kScratchCpus, so that a segment the readers
    // accept never sends them past the allocation.
    if (s.header.max_cpus > kScratchCpus && s.header.max_cpus <= shm::kMaxCpus)
        s.header.max_cpus = kScratchCpus;
    return s;
}

// What every successfully loaded configuration must satisfy, whatever the
// input: the ranges apply_setting() documents in its error messages.
inline void check_config(const config::ConfigResult& r, const config::Config& c) {
    if (!r.ok) {
        if (r.error.empty()) fail("a failed load has no error message");
        return;
    }
    if (c.shm_name.empty() || c.shm_name.size() > 64 || c.shm_name.find('/') != std::string::npos)
        fail("accepted shared_memory.name '" + c.shm_name + "'");
    for (unsigned char ch : c.shm_name)
        if (ch < 0x20 || ch == 0x7f) fail("accepted a control character in shared_memory.name");
    if (c.quantum_ns < 1000 || c.quantum_ns > 60'000'000'000ULL) fail("accepted quantum_ns");
    if ((c.preempt_after_ns != 0 && c.preempt_after_ns < 1'000'000) ||
        c.preempt_after_ns > 60'000'000'000ULL)
        fail("accepted preempt_after_ns");
    if (c.governor_spins > 1'000'000'000U) fail("accepted governor.spins");
    if (uint32_t(c.governor) > 2) fail("accepted governor.policy");
    if (uint32_t(c.isolation) > 3) fail("accepted isolation_level");
    if (c.binding.empty()) fail("accepted an empty topology.binding");
}

} // namespace coexec::fuzz
