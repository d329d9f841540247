// The segment lock as the scheduler takes it: robust (a dead holder's
// half-done change is repaired first) and, in debug builds, checked: every
// invariant of the segment is verified before the lock is released, so a
// locked operation that breaks one stops the process at once, naming it.
//
// The lock's contract is checked at compile time (shm/thread_safety.hpp):
// SharedScheduler is the capability, its locked operations are marked
// COEXEC_REQUIRES(this), and a SchedulerLock on it is what holds it. So
//
//     SchedulerLock lock(sched, wakes);
//     sched.release(cpu, wakes);
//
// compiles, and the second line alone does not (with Clang).
#pragma once

#include "scheduler/wake_list.hpp"
#include "shm/layout.hpp"
#include "shm/robust_mutex.hpp"
#include "shm/thread_safety.hpp"

namespace coexec::scheduler {

class SharedScheduler;

class COEXEC_SCOPED_CAPABILITY SchedulerLock {
  public:
    // Whether the invariants are checked at release (debug builds only).
    enum class Check { Yes, No };

    // Takes the segment lock of `sched`; repairs the segment first when the
    // previous holder died. Wakes queued in `wakes` are the caller's to
    // flush after the lock is released. Debug builds check every invariant
    // when the lock is released, unless `check` says no (a reader that
    // reports violations itself).
    SchedulerLock(SharedScheduler& sched, WakeList& wakes, Check check = Check::Yes)
        COEXEC_ACQUIRE(sched);
    // Debug builds: aborts with every violation on stderr if the segment is
    // not sound.
    ~SchedulerLock() COEXEC_RELEASE();
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
