#include "scheduler_lock.hpp"

#include "scheduler/invariants.hpp"
#include "scheduler/shared_scheduler.hpp"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace coexec::scheduler {

// The lock is taken inside RobustLock, which the analysis does not see
// into; repair() runs under it, so its call is left out of the analysis.
SchedulerLock::SchedulerLock(SharedScheduler& sched, WakeList& wakes, Check check)
    : lock_(sched.segment().header.lock,
            [&]() COEXEC_NO_THREAD_SAFETY_ANALYSIS { sched.repair(wakes); }),
      segment_(sched.segment()), check_(check) {
    // Under the lock, so a plain increment (no locked read-modify-write) on
    // the lock's own cache line, which this thread owns now; relaxed atomic
    // for the readers outside it.
    auto& n = segment_.header.lock_acquisitions;
    n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

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
