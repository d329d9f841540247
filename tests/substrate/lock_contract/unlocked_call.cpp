// The segment lock's contract, checked by the compiler (shm/thread_safety.hpp).
// Compiled twice by check.cmake with Clang's -Wthread-safety -Werror: as it
// is, a locked scheduler operation is called without the lock, and the
// compile must fail naming it; with -DTAKE_THE_LOCK the same call, under a
// SchedulerLock, must compile.
#include "scheduler/shared_scheduler.hpp"

using coexec::scheduler::SchedulerLock;
using coexec::scheduler::SharedScheduler;
using coexec::scheduler::WakeList;

int32_t release_cpu_zero(SharedScheduler& sched, WakeList& wakes) {
#ifdef TAKE_THE_LOCK
    SchedulerLock lock(sched, wakes);
#endif
    return sched.policy().release(0, wakes);
}
