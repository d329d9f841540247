// The threads a program starts, hosted (COEXEC_HOST_THREADS=all): this
// library's pthread_create gives each thread that the program's own code
// starts (a std::thread, Python's threading, a BLAS library's pthreads
// pool, a server's workers) a start routine that attaches it before the
// program's routine runs and detaches it when that routine ends, by return,
// pthread_exit or cancellation. In between it is a program thread like the
// hosted main thread: it runs only on a CPU coexec grants, and gives the
// CPU away where it blocks in the C library (blocking_interpose.cpp).
//
// Threads that coexec, an adapter or a runtime an adapter manages start
// (libomp's workers, TBB's, PoCL's) are theirs to host and are left alone,
// and so is every thread while the mode is not all.
#include "core/host/host_mode.hpp"
#include "core/interpose/host_calls.h"
#include "core/interpose/next_definition.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <pthread.h>

// libcoexec's pthread_create (which comes first in the preload order and
// hands the call on to this one) keeps the program's return address for
// the length of the call it forwards.
extern "C" const void* coexec_interposed_caller(void);

namespace coexec::host {
namespace {

using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

CreateFn next_create() {
    static std::atomic<CreateFn> cache{nullptr};
    return coexec::core::next_definition(cache, "pthread_create");
}

bool verbose() {
    const char* v = std::getenv("COEXEC_VERBOSE");
    return v && *v && std::strcmp(v, "0") != 0;
}

// The new thread, attached and hosted for the scope of the program's start
// routine. A thread that cannot attach (every thread slot of the instance
// is in use, say) runs unhosted, as a plain thread; COEXEC_VERBOSE=1 says
// so once.
class HostedThread {
  public:
    HostedThread() {
        nosv_task_t task = nullptr;
        int err = nosv_attach(&task, nullptr, "pthread", NOSV_ATTACH_NONE);
        if (err == NOSV_SUCCESS && (err = coexec_host_this_thread()) != NOSV_SUCCESS)
            nosv_detach(NOSV_DETACH_NONE);
        attached_ = err == NOSV_SUCCESS;
        if (attached_) {
            hosted_thread_started();
            return;
        }
        program_thread_unhosted();
        static std::atomic<bool> said{false};
        if (verbose() && !said.exchange(true, std::memory_order_relaxed))
            std::fprintf(stderr, "coexec: a program thread is not hosted: %s\n",
                         nosv_get_error_string(err));
    }
    ~HostedThread() {
        if (!attached_) return;
        // Lent from the signal handler while asleep where no wrapper saw
        // it: back inside coexec before it leaves.
        if (coexec_host_take_lent_asleep()) coexec_block_exit();
        coexec_unhost_this_thread();
        nosv_detach(NOSV_DETACH_NONE);
        hosted_thread_ended();
    }
    HostedThread(const HostedThread&) = delete;
    HostedThread& operator=(const HostedThread&) = delete;

  private:
    bool attached_ = false;
};

struct Start {
    void* (*routine)(void*);
    void* arg;
};

void* hosted_start(void* p) {
    const Start start = *static_cast<Start*>(p);
    delete static_cast<Start*>(p);
    // pthread_exit() and cancellation unwind the stack: the destructor
    // detaches the thread then too.
    const HostedThread hosted;
    return start.routine(start.arg);
}

} // namespace
} // namespace coexec::host

using namespace coexec::host;

extern "C" __attribute__((visibility("default"))) int
pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg) {
    const CreateFn next = next_create();
    if (next == nullptr) return ENOSYS;
    if (host_mode() != HostMode::all) return next(thread, attr, routine, arg);
    // Reached through libcoexec's definition, the program's return address
    // is the one it kept; called directly, it is this call's.
    const void* caller = coexec_interposed_caller();
    if (caller == nullptr) caller = __builtin_extract_return_addr(__builtin_return_address(0));
    if (!coexec_host_new_thread(caller)) return next(thread, attr, routine, arg);
    auto* start = new (std::nothrow) Start{routine, arg};
    if (start == nullptr) {
        program_thread_unhosted();
        return next(thread, attr, routine, arg);
    }
    const int rc = next(thread, attr, hosted_start, start);
    if (rc != 0) delete start; // no thread runs it
    return rc;
}
