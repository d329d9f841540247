// Giving a coexec CPU away around a wait that blocks in the kernel.
#pragma once

#include "support/cpu_released.hpp"

#include <pthread.h>

namespace coexec::pocl {

// True when a blocking call must give the CPU away: the calling thread is a
// coexec thread (a PoCL worker, or a host thread that another adapter made a
// coexec thread) and the call comes from PoCL's code (`caller` is the return
// address of the wrapped call). Every other wait stays untouched.
bool wait_needs_release(const void* caller);

// While alive, the calling coexec thread holds no CPU (adapter::CpuReleased).
// A thread already outside coexec lends a CPU it keeps
// (coexec_lend_kept_cpu) and gets it back, if nobody took it, at its own
// coexec_block_exit().
class CpuRelease {
  public:
    CpuRelease();

    // For condition variables: the real wait returned with `mutex` locked.
    // Takes the CPU again *without* holding the mutex, then relocks it, so
    // that no CPU holder can block on a mutex whose owner waits for a CPU.
    // Returns like a spurious wake-up, which every cond-wait caller allows.
    void retake_with_unlocked(pthread_mutex_t* mutex);

    CpuRelease(const CpuRelease&) = delete;
    CpuRelease& operator=(const CpuRelease&) = delete;

  private:
    adapter::CpuReleased cpu_;
};

} // namespace coexec::pocl
