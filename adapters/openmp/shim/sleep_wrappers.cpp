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
#include "support/next_definition.hpp"

#include <atomic>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#define COEXEC_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using coexec::adapter::required_next_definition;

std::atomic<int (*)(const timespec*, timespec*)> real_nanosleep{nullptr};
std::atomic<int (*)(clockid_t, int, const timespec*, timespec*)> real_clock_nanosleep{nullptr};
std::atomic<int (*)(useconds_t)> real_usleep{nullptr};
std::atomic<unsigned int (*)(unsigned int)> real_sleep{nullptr};
std::atomic<int (*)()> real_sched_yield{nullptr};

} // namespace

COEXEC_EXPORT int nanosleep(const struct timespec* req, struct timespec* rem) {
    kmp_coexec_blocking_section blocking;
    return required_next_definition(real_nanosleep, "nanosleep", "openmp")(req, rem);
}

COEXEC_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec* req,
                                  struct timespec* rem) {
    kmp_coexec_blocking_section blocking;
    return required_next_definition(real_clock_nanosleep, "clock_nanosleep", "openmp")(clock, flags,
                                                                                       req, rem);
}

COEXEC_EXPORT int usleep(useconds_t usec) {
    kmp_coexec_blocking_section blocking;
    return required_next_definition(real_usleep, "usleep", "openmp")(usec);
}

COEXEC_EXPORT unsigned int sleep(unsigned int seconds) {
    kmp_coexec_blocking_section blocking;
    return required_next_definition(real_sleep, "sleep", "openmp")(seconds);
}

COEXEC_EXPORT int sched_yield() noexcept {
    if (__kmp_coexec_yield()) return 0;
    return required_next_definition(real_sched_yield, "sched_yield", "openmp")();
}
