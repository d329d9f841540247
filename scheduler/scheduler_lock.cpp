#include "scheduler_lock.hpp"

#include "scheduler/invariants.hpp"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace coexec::scheduler {

SchedulerLock::~SchedulerLock() {
#ifndef NDEBUG
    if (check_ == Check::No) return;
    // Still under the lock: lock_ is released after this body.
    const std::vector<std::string> violations = check_invariants(segment_);
    if (violations.empty()) return;
    std::fprintf(stderr, "coexec: pid %d broke the segment's invariants:\n", int(::getpid()));
    for (const auto& v : violations)
        std::fprintf(stderr, "  %s\n", v.c_str());
    std::abort();
#else
    (void)check_;
    (void)segment_;
#endif
}

} // namespace coexec::scheduler
