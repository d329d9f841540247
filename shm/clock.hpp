// Monotonic time, comparable across processes on one node.
#pragma once

#include <cstdint>
#include <ctime>

namespace coexec::shm {

inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ULL + uint64_t(ts.tv_nsec);
}

} // namespace coexec::shm
