// Condition-variable waits of coexec threads inside PoCL.
#pragma once

#include <pthread.h>

namespace coexec::pocl {

// pthread_cond_wait for a coexec thread. While no other coexec work wants
// its CPU, it first polls for up to COEXEC_POCL_SPIN_US (default 100; 0
// turns polling off) per episode of back-to-back waits: it returns as a
// spurious wake-up every couple of microseconds so that the caller re-checks
// its predicate. PoCL's next command thus starts without a kernel sleep or a
// CPU hand-over. After that it waits as a paused task (CondWaiters), which
// gives the CPU away, and a signal of `cond` makes it ready again. A thread
// outside coexec (an OpenMP root in serial code) lends the CPU it keeps and
// waits in the real condvar instead. Polling instead of short timed waits is
// deliberate: with often timing-out waiters PoCL hung now and then on a lost
// wake-up, which matches glibc 2.36's condvar bug 25847 (sourceware).
int cond_wait_off_cpu(pthread_cond_t* cond, pthread_mutex_t* mutex);

// pthread_cond_timedwait for a coexec thread: gives the CPU away for the
// wait (no polling) and takes one again before returning.
int cond_timedwait_off_cpu(pthread_cond_t* cond, pthread_mutex_t* mutex,
                           const struct timespec* deadline);

} // namespace coexec::pocl
