#include "robust_mutex.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace coexec::shm {

int robust_mutex_init(pthread_mutex_t& m) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    int rc = pthread_mutex_init(&m, &attr);
    pthread_mutexattr_destroy(&attr);
    return rc;
}

bool RobustLock::acquire() {
    int rc = pthread_mutex_lock(&m_);
    if (rc == 0) return false;
    if (rc == EOWNERDEAD) return true;
    // ENOTRECOVERABLE can only follow an unlock without repair, which this
    // class never does; anything else means the segment is corrupt.
    std::fprintf(stderr, "coexec: shared segment lock is unusable (error %d)\n", rc);
    std::abort();
}

void RobustLock::mark_consistent() {
    pthread_mutex_consistent(&m_);
}

RobustLock::~RobustLock() {
    pthread_mutex_unlock(&m_);
}

} // namespace coexec::shm
