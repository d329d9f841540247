// libc's pthread_create, as libcoexec exports it: a thread created by a
// thread that coexec manages, with attributes that name no CPU mask (or
// none at all), starts from its creator's visible mask, not from the CPU
// coexec pinned the creator to (nOS-V does the same). Without this, a pool
// that a task starts (a std::thread pool, a BLAS library starting up
// lazily) would run, outside coexec, on that one CPU for good.
//
// Like the affinity calls (affinity_interpose.cpp), this definition takes
// effect when libcoexec comes before libc in the lookup order. Any other
// call goes to the next definition unchanged; a later interposer learns
// whom the call came from with coexec_interposed_caller() (forwarded_call.hpp).
#include "core/interpose/affinity.hpp"
#include "core/interpose/forwarded_call.hpp"
#include "core/interpose/next_definition.hpp"
#include "core/runtime/thread_context.hpp"

#include "scheduler/kernel_affinity.hpp"

#include <coexec/ext.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <pthread.h>
#include <sched.h>

// ThreadSanitizer's pthread_create interceptor, in the executable, calls
// this definition with a start routine of TSan's, which sets up the new
// thread for TSan; a routine of ours run before it would find no TSan
// state and crash. TSan builds (which check coexec's own races) leave such
// a thread on its creator's pin instead.
#if defined(__SANITIZE_THREAD__)
#define COEXEC_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COEXEC_UNDER_TSAN 1
#endif
#endif
#ifndef COEXEC_UNDER_TSAN
#define COEXEC_UNDER_TSAN 0
#endif

namespace coexec::core {
namespace {

using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

// The next definition (next_definition.hpp).
std::atomic<CreateFn> next_create{nullptr};

// glibc reports a full mask for attributes that carry none.
bool all_cpus(const cpu_set_t& mask) {
    cpu_set_t full;
    std::memset(&full, 0xff, sizeof full);
    return CPU_EQUAL(&mask, &full);
}

// Whether `attr` names a CPU mask of its own. One wider than a cpu_set_t
// (EINVAL) does too.
bool has_mask(const pthread_attr_t& attr) {
    cpu_set_t own;
    return pthread_attr_getaffinity_np(&attr, sizeof own, &own) != 0 || !all_cpus(own);
}

// The attributes a creator that passed none gets: the process's defaults
// (pthread_setattr_default_np) with `mask`, unless the defaults carry a
// mask themselves. glibc then sets the mask before the thread runs.
class DefaultsWithMask {
  public:
    explicit DefaultsWithMask(const cpu_set_t& mask) {
        if (pthread_getattr_default_np(&attr_) != 0) return;
        ok_ = true;
        if (has_mask(attr_)) return; // the defaults' mask applies, as without coexec
        use_ = pthread_attr_setaffinity_np(&attr_, sizeof mask, &mask) == 0;
    }
    ~DefaultsWithMask() {
        if (ok_) pthread_attr_destroy(&attr_);
    }
    DefaultsWithMask(const DefaultsWithMask&) = delete;
    DefaultsWithMask& operator=(const DefaultsWithMask&) = delete;

    // The attributes to create with: nullptr (the defaults) unless they
    // carry the mask.
    const pthread_attr_t* get() const { return use_ ? &attr_ : nullptr; }

  private:
    pthread_attr_t attr_;
    bool ok_ = false;  // attr_ holds attributes to destroy
    bool use_ = false; // ... and they carry the mask
};

// A thread created with attributes of the program's that name no mask
// takes `mask` itself, first thing, and then runs the program's routine.
// The program's attributes stay as they are: they cannot be copied (glibc's
// may hold a stack of the program's), and setting a mask in them for the
// call would write through the caller's const pointer and race with other
// threads that create with the same attributes (nOS-V sets it there and
// resets it after).
struct StartFromMask {
    void* (*routine)(void*);
    void* arg;
    cpu_set_t mask;
};

void* start_from_mask(void* p) {
    const StartFromMask start = *static_cast<StartFromMask*>(p);
    delete static_cast<StartFromMask*>(p);
    // As libcoexec's sched_setaffinity: a plain thread gets the mask from
    // the kernel. One that the start routine of a later interposer attached
    // before this one ran (as the PoCL adapter's would) is pinned already:
    // the mask becomes its visible one, which detach restores. A mask the
    // thread may not use (its cpuset changed meanwhile) is refused, and the
    // thread runs where it started.
    set_own_affinity(start.mask);
    return start.routine(start.arg);
}

// Whether the calling thread is one coexec manages and has pinned away
// from its visible mask, which it then stores in `visible`.
bool pinned_away(cpu_set_t& visible) {
    if (this_thread_context() == nullptr) return false;
    CPU_ZERO(&visible);
    if (coexec_visible_affinity(sizeof visible, &visible) != 0) return false;
    cpu_set_t kernel;
    return scheduler::kernel_own_affinity(kernel) && !CPU_EQUAL(&visible, &kernel);
}

} // namespace
} // namespace coexec::core

using namespace coexec::core;

#define COEXEC_INTERPOSE extern "C" __attribute__((visibility("default")))

COEXEC_INTERPOSE int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                    void* (*routine)(void*), void* arg) {
    const CreateFn next = next_definition(next_create, "pthread_create");
    if (next == nullptr) return ENOSYS;
    const ForwardedCall call(forwarded_caller(),
                             __builtin_extract_return_addr(__builtin_return_address(0)));
    cpu_set_t visible;
    if (!pinned_away(visible)) return next(thread, attr, routine, arg);
    if (attr == nullptr) {
        const DefaultsWithMask with_mask(visible);
        return next(thread, with_mask.get(), routine, arg);
    }
    if (has_mask(*attr) || COEXEC_UNDER_TSAN) return next(thread, attr, routine, arg);
    // Attributes of the program's without a mask: the kernel would give the
    // new thread the creator's pin, so the thread replaces it as it starts.
    auto* start = new (std::nothrow) StartFromMask{routine, arg, visible};
    if (start == nullptr) return next(thread, attr, routine, arg);
    const int rc = next(thread, attr, start_from_mask, start);
    if (rc != 0) delete start; // no thread runs it
    return rc;
}

const void*& coexec::core::forwarded_caller() {
    // initial-exec: set around every call the blocking wrappers forward.
    thread_local const void* caller __attribute__((tls_model("initial-exec"))) = nullptr;
    return caller;
}

COEXEC_INTERPOSE const void* coexec_interposed_caller(void) {
    return forwarded_caller();
}

COEXEC_INTERPOSE const void* coexec_pthread_create_caller(void) {
    return forwarded_caller();
}
