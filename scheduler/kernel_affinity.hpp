// The kernel's CPU affinity, through the raw system calls.
//
// libcoexec exports sched_getaffinity, sched_setaffinity and the pthread_*
// variants (core/interpose/affinity_interpose.cpp): for a thread coexec manages they
// answer with the mask the thread had before coexec pinned it, and remember
// a new mask instead of applying it. coexec's own pinning must reach the
// kernel, so it never calls those names: a call from inside libcoexec would
// bind to its own exports. These wrappers go straight to the system call.
#pragma once

#include <cerrno>
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

// A whole cpu_set_t of the caller's kernel affinity; false if unreadable.
inline bool kernel_own_affinity(cpu_set_t& mask) {
    CPU_ZERO(&mask);
    return kernel_get_affinity(0, sizeof mask, &mask) > 0;
}

} // namespace coexec::scheduler
