// libc calls that TBB workers make while they hold a coexec CPU.
//
// TBB's spin loops yield with sched_yield(), and code running in TBB tasks
// (spin barriers with back-off, polling loops) sleeps with nanosleep(). For a
// coexec thread neither lets other coexec threads run on its CPU: a yield
// only lets kernel threads run, and a sleeping thread keeps its CPU. With
// more workers than granted CPUs that can deadlock (a worker waits, asleep,
// for a worker that waits for its CPU). When the library is preloaded these
// definitions take precedence over libc's: on a worker that holds a coexec
// CPU a yield goes to waiting coexec work and a sleep releases the CPU;
// everywhere else they call the next definition: libc's, or the OpenMP
// adapter's when `coexec run` preloads it after this library.

#include "hosted_thread.h"
#include "support/next_definition.hpp"

#include <coexec/ext.h>

#include <atomic>
#include <cerrno>
#include <sched.h>
#include <time.h>
#include <unistd.h>

namespace coexec::tbb_rml {

namespace {

// initial-exec: a plain load, no allocation, safe in any libc hook.
__attribute__((tls_model("initial-exec"))) thread_local bool tls_on_cpu = false;
// Set while a hook is inside coexec, so that libcoexec's own yields or sleeps
// (should it ever make any) go straight to libc instead of recursing.
__attribute__((tls_model("initial-exec"))) thread_local bool tls_in_hook = false;

// True when the calling thread's libc calls should go through coexec.
bool hooks_apply() {
    return tls_on_cpu && !tls_in_hook;
}

// Marks the calling thread as inside coexec for the scope's duration.
class InHook {
  public:
    InHook() { tls_in_hook = true; }
    ~InHook() { tls_in_hook = false; }
    InHook(const InHook&) = delete;
    InHook& operator=(const InHook&) = delete;
};

// Gives the CPU back for the duration of a kernel sleep.
class CpuReleasedWhileAsleep {
  public:
    CpuReleasedWhileAsleep() : released_(hooks_apply() && enter()) {}
    ~CpuReleasedWhileAsleep() {
        if (!released_) return;
        InHook guard;
        coexec_block_exit();
    }
    CpuReleasedWhileAsleep(const CpuReleasedWhileAsleep&) = delete;
    CpuReleasedWhileAsleep& operator=(const CpuReleasedWhileAsleep&) = delete;

  private:
    static bool enter() {
        InHook guard;
        return coexec_block_enter() == 0;
    }
    const bool released_;
};

// Lets waiting coexec work use the CPU first; false if nobody waited.
bool yield_to_coexec() {
    if (!hooks_apply() || !coexec_cpu_wanted()) return false;
    InHook guard;
    return nosv_yield(NOSV_YIELD_NONE) == NOSV_SUCCESS;
}

using nanosleep_fn = int (*)(const timespec*, timespec*);
using clock_nanosleep_fn = int (*)(clockid_t, int, const timespec*, timespec*);
using usleep_fn = int (*)(useconds_t);
using sched_yield_fn = int (*)();
std::atomic<nanosleep_fn> libc_nanosleep{nullptr};
std::atomic<clock_nanosleep_fn> libc_clock_nanosleep{nullptr};
std::atomic<usleep_fn> libc_usleep{nullptr};
std::atomic<sched_yield_fn> libc_sched_yield{nullptr};

} // namespace

bool on_coexec_cpu() noexcept {
    return tls_on_cpu;
}

void set_on_coexec_cpu(bool value) noexcept {
    tls_on_cpu = value;
}

} // namespace coexec::tbb_rml

using coexec::tbb_rml::CpuReleasedWhileAsleep;

extern "C" {

__attribute__((visibility("default"))) int sched_yield() noexcept {
    if (coexec::tbb_rml::yield_to_coexec()) return 0;
    // Not a TBB worker's yield: the next definition decides (the OpenMP
    // adapter's, when `coexec run` preloads it after this library; else libc).
    auto real = coexec::adapter::required_next_definition(coexec::tbb_rml::libc_sched_yield,
                                                          "sched_yield", "tbb");
    return real();
}

__attribute__((visibility("default"))) int nanosleep(const timespec* request, timespec* remaining) {
    auto real = coexec::adapter::required_next_definition(coexec::tbb_rml::libc_nanosleep,
                                                          "nanosleep", "tbb");
    CpuReleasedWhileAsleep released;
    return real(request, remaining);
}

__attribute__((visibility("default"))) int
clock_nanosleep(clockid_t clock, int flags, const timespec* request, timespec* remaining) {
    auto real = coexec::adapter::required_next_definition(coexec::tbb_rml::libc_clock_nanosleep,
                                                          "clock_nanosleep", "tbb");
    CpuReleasedWhileAsleep released;
    return real(clock, flags, request, remaining);
}

__attribute__((visibility("default"))) int usleep(useconds_t micros) {
    auto real =
        coexec::adapter::required_next_definition(coexec::tbb_rml::libc_usleep, "usleep", "tbb");
    CpuReleasedWhileAsleep released;
    return real(micros);
}

} // extern "C"
