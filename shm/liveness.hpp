// Process identity that survives pid reuse: pid plus kernel start time.
#pragma once

#include <cstdint>
#include <sys/types.h>

namespace coexec::shm {

// Start time of `pid` in clock ticks since boot (field 22 of
// /proc/<pid>/stat), or 0 when the process does not exist.
uint64_t process_start_time(pid_t pid);

// True when `pid` exists and started at `start_time`.
bool process_alive(pid_t pid, uint64_t start_time);

// True when thread `tid` of process `pid` exists and is not a zombie. A
// process that replaced its image (execve) has none of its old threads
// left: only the one that called execve, which took the pid as its tid.
bool thread_alive(pid_t pid, pid_t tid);

// True when thread `tid` of `pid` is running or runnable in the kernel
// (state R), not sleeping in a system call.
bool thread_on_cpu(pid_t pid, pid_t tid);

// Nanoseconds thread `tid` of `pid` has run on a CPU (the first field of
// /proc/<pid>/task/<tid>/schedstat), or -1 when it cannot be read (the
// thread is gone).
int64_t thread_run_ns(pid_t pid, pid_t tid);

} // namespace coexec::shm
