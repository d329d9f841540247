// The segment lock as the scheduler takes it: robust (a dead holder's
// half-done change is repaired first) and, in debug builds, checked: every
// invariant of the segment is verified before the lock is released, so a
// locked operation that breaks one stops the process at once, naming it.
#pragma once

#include "shm/layout.hpp"
#include "shm/robust_mutex.hpp"

namespace coexec::scheduler {

class SchedulerLock {
  public:
    // Whether the invariants are checked at release (debug builds only).
    enum class Check { Yes, No };

    template <typename Repair>
    SchedulerLock(shm::Segment& segment, Repair&& repair, Check check)
        : lock_(segment.header.lock, std::forward<Repair>(repair)), segment_(segment),
          check_(check) {}
    // Debug builds: aborts with every violation on stderr if the segment is
    // not sound.
    ~SchedulerLock();
    // The segment was found corrupt under this lock and is left alone: do
    // not check it again at release.
    void skip_check() { check_ = Check::No; }
    SchedulerLock(const SchedulerLock&) = delete;
    SchedulerLock& operator=(const SchedulerLock&) = delete;

  private:
    shm::RobustLock lock_;
    const shm::Segment& segment_;
    Check check_;
};

} // namespace coexec::scheduler
