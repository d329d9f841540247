// A small test-and-test-and-set lock for very short critical sections (the
// ready queue, the guards of the compat.h objects). Waiters spin briefly,
// then yield the kernel CPU, so a holder that was preempted still gets to
// run. The yield is the raw system call: adapters interpose sched_yield() to
// give up coexec CPUs, and a thread in the middle of a scheduling operation
// must never re-enter the scheduler.
#pragma once

#include <atomic>
#include <sys/syscall.h>
#include <unistd.h>

namespace coexec::core {

class SpinLock {
  public:
    void lock() noexcept {
        for (int spins = 0;; ++spins) {
            // Acquire pairs with unlock's release: the critical sections of
            // successive holders are ordered.
            if (!locked_.exchange(true, std::memory_order_acquire)) return;
            while (locked_.load(std::memory_order_relaxed)) {
                if (++spins > 128) {
                    ::syscall(SYS_sched_yield);
                    spins = 0;
                }
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
        }
    }
    bool try_lock() noexcept {
        return !locked_.exchange(true, std::memory_order_acquire);
    }
    void unlock() noexcept {
        locked_.store(false, std::memory_order_release);
    }

  private:
    std::atomic<bool> locked_{false};
};

} // namespace coexec::core
