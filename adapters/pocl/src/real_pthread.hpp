// The glibc entry points that the PoCL adapter wraps, resolved by version.
#pragma once

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace coexec::pocl {

// The next definitions (after this preload library) of the functions the
// adapter interposes, each bound to the symbol version that PoCL's binaries
// reference on glibc 2.34+ (pthread_cond_* at GLIBC_2.3.2, the thread calls at
// GLIBC_2.34, with the x86-64 base version as fallback for older glibc).
struct RealPthread {
    using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
    using JoinFn = int (*)(pthread_t, void**);
    using CondWaitFn = int (*)(pthread_cond_t*, pthread_mutex_t*);
    using CondTimedWaitFn = int (*)(pthread_cond_t*, pthread_mutex_t*, const struct timespec*);
    using CondWakeFn = int (*)(pthread_cond_t*);
    using BarrierWaitFn = int (*)(pthread_barrier_t*);

    CreateFn create = nullptr;
    JoinFn join = nullptr;
    CondWaitFn cond_wait = nullptr;
    CondTimedWaitFn cond_timedwait = nullptr;
    CondWakeFn cond_signal = nullptr;
    CondWakeFn cond_broadcast = nullptr;
    BarrierWaitFn barrier_wait = nullptr;
};

// Resolved once, on first use (thread-safe); aborts with a message if glibc
// lacks one of them, since no sane fallback exists for a missing pthread call.
const RealPthread& real_pthread();

// sched_yield() as the system call. The OpenMP and TBB adapters interpose
// sched_yield() as a spin of their own threads and mostly return from it at
// once, so an OpenMP host thread waiting in PoCL would not give way.
inline void kernel_yield() {
    ::syscall(SYS_sched_yield);
}

} // namespace coexec::pocl
