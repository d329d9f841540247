// libc's affinity calls, as libcoexec exports them: for a thread coexec
// manages (attached, or a worker) they answer with its visible mask and
// remember a new one instead of applying it (docs/affinity.md). Any other
// thread, and any thread of another process, goes to the next definition
// (libc's, or an interposer's that comes after libcoexec). These definitions
// take effect when libcoexec comes before libc in the program's lookup
// order: linked with -lcoexec / -lnosv, or preloaded (`coexec run` does).
//
// glibc's pthread_getaffinity_np and pthread_setaffinity_np make the system
// call themselves rather than call the sched_* functions, so all four are
// defined here. coexec's own pinning never calls these names (see
// scheduler/kernel_affinity.hpp).
#include "core/interpose/affinity.hpp"
#include "core/interpose/next_definition.hpp"
#include "core/runtime/thread_context.hpp"

#include "scheduler/kernel_affinity.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <pthread.h>
#include <sched.h>

namespace coexec::core {
namespace {

using Target = AffinityRegistry::Target;

using SchedGetFn = int (*)(pid_t, size_t, cpu_set_t*);
using SchedSetFn = int (*)(pid_t, size_t, const cpu_set_t*);
using PthreadGetFn = int (*)(pthread_t, size_t, cpu_set_t*);
using PthreadSetFn = int (*)(pthread_t, size_t, const cpu_set_t*);

// The next definitions (next_definition.hpp).
std::atomic<SchedGetFn> next_sched_get{nullptr};
std::atomic<SchedSetFn> next_sched_set{nullptr};
std::atomic<PthreadGetFn> next_pthread_get{nullptr};
std::atomic<PthreadSetFn> next_pthread_set{nullptr};

// The calling thread's context, if coexec knows the thread.
ThreadContext* self_context() {
    return this_thread_context();
}

// Whom a sched_* call with `pid` names, if it may be a managed thread:
// the caller (0 or its own tid) or another thread by tid.
bool target_of(pid_t pid, Target& t) {
    ThreadContext* self = self_context();
    if (self && (pid == 0 || pid == self->affinity.tid)) {
        t.self = &self->affinity;
        return true;
    }
    if (pid <= 0) return false; // an unmanaged caller, or the kernel's error
    t.tid = pid;
    return true;
}

bool target_of(const pthread_t& thread, Target& t) {
    ThreadContext* self = self_context();
    if (self && pthread_equal(thread, pthread_self())) {
        t.self = &self->affinity;
        return true;
    }
    t.pthread = &thread;
    return true;
}

// Fills the caller's `mask` of `size` bytes with the visible mask `shown`
// of thread `tid`, as the kernel and glibc would fill it with the kernel's
// mask: EINVAL for a size too small for the kernel's masks or not a
// multiple of a long, EFAULT for no buffer, bytes past the kernel's mask
// zeroed. Returns 0 or the errno value.
int fill_visible(pid_t tid, const cpu_set_t& shown, size_t size, cpu_set_t* mask) {
    if (!mask) return EFAULT;
    // The kernel itself judges the size, for this very thread. It writes at
    // most a cpu_set_t here (the registry is enabled only when its masks
    // fit one), so a larger size is never too small: only its alignment is
    // left to check.
    if (size > sizeof(cpu_set_t) && size % sizeof(long) != 0) return EINVAL;
    cpu_set_t scratch;
    const long n = scheduler::kernel_get_affinity(
        tid, std::min({size, sizeof scratch, size_t(INT_MAX)}), &scratch);
    if (n < 0) return int(-n);
    const size_t copied = std::min(size_t(n), size);
    std::memcpy(mask, &shown, copied);
    std::memset(reinterpret_cast<char*>(mask) + copied, 0, size - copied);
    return 0;
}

// A new mask as the kernel would take it: the first bytes of `mask` (the
// rest zero), trimmed to the online CPUs.
int read_new_mask(const AffinityRegistry& reg, size_t size, const cpu_set_t* mask, cpu_set_t& out) {
    if (!mask) return EFAULT;
    CPU_ZERO(&out);
    std::memcpy(&out, mask, std::min(size, reg.kernel_bytes()));
    CPU_AND(&out, &out, &reg.online());
    return CPU_COUNT(&out) == 0 ? EINVAL : 0;
}

// errno-style result of a sched_* call.
int errno_result(int rc) {
    if (rc == 0) return 0;
    errno = rc;
    return -1;
}

// The registry, when there are managed threads to look for. Looks up the
// next definitions first: a forwarded call may run under the registry's
// mutex, and dlsym() there could wait for the loader's lock, held by a
// thread whose library constructor waits for the registry.
AffinityRegistry* registry() {
    AffinityRegistry* reg = AffinityRegistry::existing();
    if (!reg || !reg->enabled()) return nullptr;
    next_definition(next_sched_get, "sched_getaffinity");
    next_definition(next_sched_set, "sched_setaffinity");
    next_definition(next_pthread_get, "pthread_getaffinity_np");
    next_definition(next_pthread_set, "pthread_setaffinity_np");
    return reg;
}

// The next sched_getaffinity, or the system call with glibc's semantics.
int forward_sched_get(pid_t pid, size_t size, cpu_set_t* mask) {
    if (auto fn = next_definition(next_sched_get, "sched_getaffinity")) return fn(pid, size, mask);
    const long n = scheduler::kernel_get_affinity(pid, std::min(size, size_t(INT_MAX)), mask);
    if (n < 0) {
        errno = int(-n);
        return -1;
    }
    std::memset(reinterpret_cast<char*>(mask) + n, 0, size - size_t(n));
    return 0;
}

int forward_pthread_get(pthread_t thread, size_t size, cpu_set_t* mask) {
    if (auto fn = next_definition(next_pthread_get, "pthread_getaffinity_np"))
        return fn(thread, size, mask);
    return ENOSYS;
}

int forward_pthread_set(pthread_t thread, size_t size, const cpu_set_t* mask) {
    if (auto fn = next_definition(next_pthread_set, "pthread_setaffinity_np"))
        return fn(thread, size, mask);
    return ENOSYS;
}

int forward_sched_set(pid_t pid, size_t size, const cpu_set_t* mask) {
    if (auto fn = next_definition(next_sched_set, "sched_setaffinity")) return fn(pid, size, mask);
    if (int err = scheduler::kernel_set_affinity(pid, size, mask)) {
        errno = err;
        return -1;
    }
    return 0;
}

// sched_getaffinity / pthread_getaffinity_np of a managed record: 0 or an
// errno value (under the registry's mutex).
int get_visible(const AffinityRecord& rec, size_t size, cpu_set_t* mask) {
    return fill_visible(rec.tid, rec.mask, size, mask);
}

// The set counterpart: only the caller's own thread, outside coexec, moves
// at once.
int set_visible(AffinityRegistry& reg, AffinityRecord& rec, const Target& t, size_t size,
                const cpu_set_t* mask) {
    cpu_set_t want;
    if (int err = read_new_mask(reg, size, mask, want)) return err;
    const bool apply = t.self && self_context()->binding.own_affinity_applies;
    return reg.remember(rec, want, apply);
}

} // namespace
} // namespace coexec::core

using namespace coexec::core;

#define COEXEC_INTERPOSE extern "C" __attribute__((visibility("default")))

namespace {

// Config::affinity_compat of the process's runtime. Relaxed: it is set at
// nosv_init, before any thread is managed, and a stale read only shows one
// call the other mask.
std::atomic<bool> g_affinity_compat{true};

// sched_getaffinity as libcoexec defines it (below), reachable by name too.
int visible_sched_get(pid_t pid, size_t cpusetsize, cpu_set_t* mask) {
    Target t;
    AffinityRegistry* reg = registry();
    if (!reg || !g_affinity_compat.load(std::memory_order_relaxed) || !target_of(pid, t))
        return forward_sched_get(pid, cpusetsize, mask);
    return reg->locked(t, [&](AffinityRecord* rec) {
        return rec ? errno_result(get_visible(*rec, cpusetsize, mask))
                   : forward_sched_get(pid, cpusetsize, mask);
    });
}

// sched_setaffinity likewise.
int visible_sched_set(pid_t pid, size_t cpusetsize, const cpu_set_t* mask) {
    Target t;
    AffinityRegistry* reg = registry();
    if (!reg || !target_of(pid, t)) return forward_sched_set(pid, cpusetsize, mask);
    return reg->locked(t, [&](AffinityRecord* rec) {
        return rec ? errno_result(set_visible(*reg, *rec, t, cpusetsize, mask))
                   : forward_sched_set(pid, cpusetsize, mask);
    });
}

} // namespace

void coexec::core::set_affinity_compat(bool on) {
    g_affinity_compat.store(on, std::memory_order_relaxed);
}

int coexec::core::set_own_affinity(const cpu_set_t& mask) {
    return visible_sched_set(0, sizeof mask, &mask) == 0 ? 0 : errno;
}

COEXEC_INTERPOSE int sched_getaffinity(pid_t pid, size_t cpusetsize, cpu_set_t* mask) {
    return visible_sched_get(pid, cpusetsize, mask);
}

COEXEC_INTERPOSE int coexec_visible_affinity(size_t size, void* mask) {
    return visible_sched_get(0, size, static_cast<cpu_set_t*>(mask)) == 0 ? 0 : errno;
}

COEXEC_INTERPOSE int sched_setaffinity(pid_t pid, size_t cpusetsize, const cpu_set_t* mask) {
    return visible_sched_set(pid, cpusetsize, mask);
}

COEXEC_INTERPOSE int pthread_getaffinity_np(pthread_t thread, size_t cpusetsize,
                                            cpu_set_t* cpuset) {
    Target t;
    AffinityRegistry* reg = registry();
    if (!reg || !g_affinity_compat.load(std::memory_order_relaxed) || !target_of(thread, t))
        return forward_pthread_get(thread, cpusetsize, cpuset);
    return reg->locked(t, [&](AffinityRecord* rec) {
        return rec ? get_visible(*rec, cpusetsize, cpuset)
                   : forward_pthread_get(thread, cpusetsize, cpuset);
    });
}

COEXEC_INTERPOSE int pthread_setaffinity_np(pthread_t thread, size_t cpusetsize,
                                            const cpu_set_t* cpuset) {
    Target t;
    AffinityRegistry* reg = registry();
    if (!reg || !target_of(thread, t)) return forward_pthread_set(thread, cpusetsize, cpuset);
    return reg->locked(t, [&](AffinityRecord* rec) {
        return rec ? set_visible(*reg, *rec, t, cpusetsize, cpuset)
                   : forward_pthread_set(thread, cpusetsize, cpuset);
    });
}
