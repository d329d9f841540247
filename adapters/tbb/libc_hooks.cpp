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
#include <cstdarg>
#include <cstring>
#include <dlfcn.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
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
using syscall_fn = long (*)(long, ...);
std::atomic<syscall_fn> libc_syscall{nullptr};

// Whether `caller` is code of libtbb (dladdr: only on the way to a sleep).
bool from_libtbb(const void* caller) {
    Dl_info info;
    return dladdr(caller, &info) != 0 && info.dli_fname != nullptr &&
           std::strstr(info.dli_fname, "libtbb.so") != nullptr;
}

bool is_futex_wait(long number, long op) {
    const long cmd = op & FUTEX_CMD_MASK;
    return number == SYS_futex && (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET);
}

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

// libtbb's waiters (a master in task_group::wait() or a blocking algorithm,
// inside a MasterSection) sleep in a futex of libtbb's own, through
// syscall(). A thread that holds a coexec CPU there kept it while it slept:
// two masters asleep so held both CPUs of a 2-CPU node while the thread
// they waited for waited for one (tbb.upstream.coexec.test_task_group hung
// about once in 50 runs). Such a sleep now releases the CPU, as a sleep in
// nanosleep() does; every other call goes on unchanged. The six arguments
// are forwarded as glibc's syscall() reads them, all six always.
__attribute__((visibility("default"))) long syscall(long number, ...) noexcept {
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (long& x : a)
        x = va_arg(ap, long);
    va_end(ap);
    auto real =
        coexec::adapter::required_next_definition(coexec::tbb_rml::libc_syscall, "syscall", "tbb");
    if (!coexec::tbb_rml::is_futex_wait(number, a[1]) || !coexec::tbb_rml::hooks_apply() ||
        !coexec::tbb_rml::from_libtbb(__builtin_return_address(0)))
        return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
    long rc = 0;
    int saved = 0;
    {
        CpuReleasedWhileAsleep released;
        rc = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
        saved = errno;
    }
    errno = saved;
    return rc;
}

__attribute__((visibility("default"))) int usleep(useconds_t micros) {
    auto real =
        coexec::adapter::required_next_definition(coexec::tbb_rml::libc_usleep, "usleep", "tbb");
    CpuReleasedWhileAsleep released;
    return real(micros);
}

} // extern "C"
