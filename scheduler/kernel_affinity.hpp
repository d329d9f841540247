// The kernel's CPU affinity, through the raw system calls.
//
// libcoexec exports sched_getaffinity, sched_setaffinity and the pthread_*
// variants (core/interpose/affinity_interpose.cpp): for a thread coexec manages they
// answer with the mask the thread had before coexec pinned it, and remember
// a new mask instead of applying it. coexec's own pinning must reach the
// kernel, so it never calls those names: a call from inside libcoexec would
// bind to its own exports. These wrappers go straight to the system call.
#pragma once

#include "shm/layout.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace coexec::scheduler {

// Sets the kernel affinity of thread `tid` (0: the caller) to the first
// `size` bytes of `mask`. Returns 0 or a positive errno value.
inline int kernel_set_affinity(pid_t tid, size_t size, const cpu_set_t* mask) {
    const long rc = ::syscall(SYS_sched_setaffinity, tid, size, mask);
    return rc == 0 ? 0 : errno;
}

// Reads the kernel affinity of thread `tid` (0: the caller) into `mask`.
// Returns how many bytes the kernel wrote (the rest of `mask` is left as
// it was), or a negative errno value (EINVAL when `size` is too small for
// the kernel's mask, or not a multiple of sizeof(long)).
inline long kernel_get_affinity(pid_t tid, size_t size, cpu_set_t* mask) {
    const long rc = ::syscall(SYS_sched_getaffinity, tid, size, mask);
    return rc < 0 ? -long(errno) : rc;
}

// A whole cpu_set_t of the caller's kernel affinity; false if unreadable
// (also when the kernel's masks are wider than a cpu_set_t's 1,024 CPUs).
inline bool kernel_own_affinity(cpu_set_t& mask) {
    CPU_ZERO(&mask);
    return kernel_get_affinity(0, sizeof mask, &mask) > 0;
}

// A kernel CPU mask for CPU ids below shm::kMaxCpus: the scheduler's own
// pinning, on nodes past a cpu_set_t's 1,024 CPUs too. On the stack, 512
// bytes, no allocation (grants are made from a signal handler too).
class CpuMask {
  public:
    static constexpr int kIds = shm::kMaxCpus;
    // False, and nothing set, for an id the mask cannot hold.
    bool set(int id) {
        if (id < 0 || id >= kIds) return false;
        words_[size_t(id) / kBits] |= 1UL << (size_t(id) % kBits);
        used_ = std::max(used_, size_t(id) / kBits + 1);
        return true;
    }
    bool test(int id) const {
        return id >= 0 && id < kIds && (words_[size_t(id) / kBits] >> (size_t(id) % kBits)) & 1;
    }
    // Sets thread `tid`'s (0: the caller's) kernel affinity to this mask.
    // Returns 0 or a positive errno value.
    int apply(pid_t tid) const {
        return kernel_set_affinity(tid, std::max<size_t>(used_, 1) * sizeof(unsigned long),
                                   reinterpret_cast<const cpu_set_t*>(words_.data()));
    }
    // Reads the caller's kernel affinity; false if unreadable (a kernel
    // with more possible CPUs than kIds).
    bool read_own() {
        words_.fill(0);
        const long n =
            kernel_get_affinity(0, sizeof words_, reinterpret_cast<cpu_set_t*>(words_.data()));
        used_ = n > 0 ? size_t(n) / sizeof(unsigned long) : 0;
        return n > 0;
    }

  private:
    static constexpr size_t kBits = sizeof(unsigned long) * CHAR_BIT;
    std::array<unsigned long, size_t(kIds) / kBits> words_{};
    size_t used_ = 0; // words the kernel needs to see: up to the last set
};

} // namespace coexec::scheduler
