// coexec: a coexec thread that sleeps or yields in user code gives its CPU
// away meanwhile. libomp exports these wrappers (see the exports patch), so
// they interpose the C library's functions for the whole program; threads
// that hold no coexec CPU go straight to the C library.
//
// Why: code inside a parallel region that waits for another thread with a
// sleep loop (common in tests and hand-written handshakes) would otherwise
// keep its CPU while the thread it waits for needs one: a deadlock once the
// team is larger than the CPUs coexec grants.
#include "kmp_coexec.h"

#include <dlfcn.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#define COEXEC_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The C library's definition of `name`, looked up once. Racing first calls
// store the same pointer, so relaxed order is enough.
template <typename Fn>
Fn next_definition(const char* name, std::atomic<void*>& cache) {
    void* fn = cache.load(std::memory_order_relaxed);
    if (fn == nullptr) {
        fn = dlsym(RTLD_NEXT, name);
        cache.store(fn, std::memory_order_relaxed);
    }
    return reinterpret_cast<Fn>(fn);
}

std::atomic<void*> real_nanosleep{nullptr};
std::atomic<void*> real_clock_nanosleep{nullptr};
std::atomic<void*> real_usleep{nullptr};
std::atomic<void*> real_sleep{nullptr};
std::atomic<void*> real_sched_yield{nullptr};

} // namespace

COEXEC_EXPORT int nanosleep(const struct timespec* req, struct timespec* rem) {
    kmp_coexec_blocking_section blocking;
    using Fn = int (*)(const struct timespec*, struct timespec*);
    return next_definition<Fn>("nanosleep", real_nanosleep)(req, rem);
}

COEXEC_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec* req,
                                  struct timespec* rem) {
    kmp_coexec_blocking_section blocking;
    using Fn = int (*)(clockid_t, int, const struct timespec*, struct timespec*);
    return next_definition<Fn>("clock_nanosleep", real_clock_nanosleep)(clock, flags, req, rem);
}

COEXEC_EXPORT int usleep(useconds_t usec) {
    kmp_coexec_blocking_section blocking;
    using Fn = int (*)(useconds_t);
    return next_definition<Fn>("usleep", real_usleep)(usec);
}

COEXEC_EXPORT unsigned int sleep(unsigned int seconds) {
    kmp_coexec_blocking_section blocking;
    using Fn = unsigned int (*)(unsigned int);
    return next_definition<Fn>("sleep", real_sleep)(seconds);
}

COEXEC_EXPORT int sched_yield() noexcept {
    if (__kmp_coexec_yield()) return 0;
    using Fn = int (*)();
    return next_definition<Fn>("sched_yield", real_sched_yield)();
}
