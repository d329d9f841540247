// coexec: a scoped pthread mutex lock for the libomp shim.
#pragma once

#include <pthread.h>

namespace coexec::openmp {

// Locks `m` for its lifetime. std::mutex would pull in the C++ runtime,
// which libomp links without.
class MutexLock {
  public:
    explicit MutexLock(pthread_mutex_t& m) : m_(m) { pthread_mutex_lock(&m_); }
    ~MutexLock() { pthread_mutex_unlock(&m_); }
    MutexLock(const MutexLock&) = delete;
    MutexLock& operator=(const MutexLock&) = delete;

  private:
    pthread_mutex_t& m_;
};

} // namespace coexec::openmp
