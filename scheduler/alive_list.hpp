// A lock-free walk of the segment's alive list (Header::alive).
#pragma once

#include "shm/layout.hpp"

#include <algorithm>
#include <cstdint>

namespace coexec::scheduler {

// Calls `stop(proc)` for each process on the alive list until one returns
// true, and says whether one did. The list may change under the walk; the
// bounds are checked, so a stale read only skips or repeats a process.
template <class Stop>
bool any_alive(const shm::Header& h, Stop stop) {
    const int n = std::min<int>(h.alive_count, shm::kMaxProcs);
    for (int i = 0; i < n; ++i) {
        const int32_t p = h.alive[i];
        if (p >= 0 && p < shm::kMaxProcs && stop(p)) return true;
    }
    return false;
}

} // namespace coexec::scheduler
