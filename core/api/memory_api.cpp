// nosv/memory.h: how full the shared segment is. Read without the segment
// lock, from the slots' own atomic words: a snapshot, as nOS-V's estimates.
#include <nosv/memory.h>

#include "core/api/c_api_support.hpp"
#include "core/runtime/runtime.hpp"

#include <algorithm>

using coexec::core::Runtime;
using namespace coexec::shm;

namespace {

constexpr auto rlx = std::memory_order_relaxed;

// Live process slots and the thread slots they hold.
struct Occupancy {
    int procs = 0;
    int64_t threads = 0;
};

Occupancy occupancy(const Segment& s) {
    Occupancy o;
    for (int p = 0; p < s.header.max_procs; ++p) {
        const ProcSlot& slot = s.procs[p];
        if (slot.state.load(rlx) != ProcState::Alive) continue;
        ++o.procs;
        o.threads += std::max(0, slot.threads.load(rlx));
    }
    return o;
}

} // namespace

COEXEC_API int nosv_memory_get_used(size_t* used) {
    if (!used) return NOSV_ERR_INVALID_PARAMETER;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    const Segment& s = rt->membership().segment();
    const Occupancy o = occupancy(s);
    const size_t bytes = sizeof(Header) + size_t(s.header.cpu_count) * sizeof(CpuSlot) +
                         size_t(o.procs) * sizeof(ProcSlot) +
                         size_t(o.threads) * sizeof(ThreadSlot);
    *used = std::min<size_t>(bytes, s.header.total_size);
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_memory_get_size(size_t* size) {
    if (!size) return NOSV_ERR_INVALID_PARAMETER;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    *size = size_t(rt->membership().segment().header.total_size);
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_memory_get_pressure(float* pressure) {
    if (!pressure) return NOSV_ERR_INVALID_PARAMETER;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    const Segment& s = rt->membership().segment();
    const Occupancy o = occupancy(s);
    const float procs = float(o.procs) / float(std::max(1, s.header.max_procs));
    const float threads = float(o.threads) / float(std::max(1, s.header.max_threads));
    *pressure = std::clamp(std::max(procs, threads), 0.0f, 1.0f);
    return NOSV_SUCCESS;
}
