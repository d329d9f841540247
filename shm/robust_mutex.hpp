// The segment lock: a process-shared, robust pthread mutex.
//
// When a holder dies (even by SIGKILL), the kernel hands the lock to the next
// locker with EOWNERDEAD; that locker repairs the segment and marks the lock
// consistent, so no lock can stay held by a dead process.
#pragma once

#include <pthread.h>

namespace coexec::shm {

// Initialises `m` in place as process-shared and robust. Returns an errno.
int robust_mutex_init(pthread_mutex_t& m);

// Holds the segment lock for its lifetime. `repair` runs under the lock
// (before the guard constructor returns) when the previous holder died.
class RobustLock {
  public:
    template <typename Repair>
    RobustLock(pthread_mutex_t& m, Repair&& repair) : m_(m) {
        if (acquire()) {
            repair();
            mark_consistent();
        }
    }
    ~RobustLock();
    RobustLock(const RobustLock&) = delete;
    RobustLock& operator=(const RobustLock&) = delete;

  private:
    // Returns true when the previous owner died holding the lock.
    bool acquire();
    void mark_consistent();
    pthread_mutex_t& m_;
};

} // namespace coexec::shm
