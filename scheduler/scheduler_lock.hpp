// The segment lock as the scheduler takes it: robust (a dead holder's
// half-done change is repaired first) and, in debug builds, checked: every
// invariant of the segment is verified before the lock is released, so a
// locked operation that breaks one stops the process at once, naming it.
//
// The lock's contract is checked at compile time (shm/thread_safety.hpp):
// `segment_lock` below is the capability, every locked operation of the
// scheduler's parts is marked COEXEC_REQUIRES(segment_lock), and a
// SchedulerLock is what holds it. So
//
//     SchedulerLock lock(sched, wakes);
//     sched.policy().release(cpu, wakes);
//
// compiles, and the second line alone does not (with Clang).
#pragma once

#include "scheduler/wake_list.hpp"
#include "shm/layout.hpp"
#include "shm/robust_mutex.hpp"
#include "shm/thread_safety.hpp"

namespace coexec::scheduler {

class SharedScheduler;

// The segment lock, as the compiler's analysis knows it. The scheduler is
// several objects (the CPU table, the process table, the policy) that each
// guard their writes with the same lock, the one in the segment's header;
// the analysis cannot tell that `sched.cpus()` and `sched.policy()` belong
// to one segment, so the lock is this one role, held by every SchedulerLock.
// What it checks is that a locked operation runs under a segment lock; that
// it is the lock of the same segment holds by construction: a process
// reaches one instance through one SharedScheduler, whose parts share its
// segment. The object has no state and no code.
class COEXEC_CAPABILITY("segment lock") SegmentLockRole {};
inline SegmentLockRole segment_lock;

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
        COEXEC_ACQUIRE(segment_lock);
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
    shm::Segment& segment_;
    Check check_;
};

} // namespace coexec::scheduler
