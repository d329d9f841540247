// The symbols this preload library exports: glibc's pthread calls that PoCL's
// pthread driver makes, redirected through coexec when PoCL makes them.
#include "cond_wait.hpp"
#include "cond_waiters.hpp"
#include "cpu_release.hpp"
#include "membership.hpp"
#include "pocl_modules.hpp"
#include "real_pthread.hpp"
#include "worker_thread.hpp"

#include <coexec/ext.h>

#include <pthread.h>

using namespace coexec::pocl;

#define COEXEC_POCL_EXPORT extern "C" __attribute__((visibility("default")))
// The caller of a pthread call: the program's return address, which
// libcoexec keeps for the calls it forwards (it comes first under `coexec
// run`), else this call's own.
#define COEXEC_POCL_CALLER()                                                                       \
    (coexec_interposed_caller() ? coexec_interposed_caller()                                       \
                                : __builtin_extract_return_addr(__builtin_return_address(0)))

// Threads that PoCL's pthread driver starts become coexec threads; the creator
// is recognised by the library its call comes from.
COEXEC_POCL_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                      void* (*start)(void*), void* arg) {
    const void* caller = COEXEC_POCL_CALLER();
    if (module_of(caller) == Module::PoclPthread && PoclMembership::instance().start())
        return create_worker(thread, attr, start, arg);
    return real_pthread().create(thread, attr, start, arg);
}

// PoCL joins its workers at device teardown; a coexec host thread must not
// hold its CPU meanwhile, since the workers need one to finish.
COEXEC_POCL_EXPORT int pthread_join(pthread_t thread, void** result) {
    if (!wait_needs_release(COEXEC_POCL_CALLER())) return real_pthread().join(thread, result);
    CpuRelease release;
    return real_pthread().join(thread, result);
}

// Idle workers park here, and host threads wait here in clFinish and
// clWaitForEvents: neither may keep a coexec CPU while asleep.
COEXEC_POCL_EXPORT int pthread_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex) {
    if (!wait_needs_release(COEXEC_POCL_CALLER())) return real_pthread().cond_wait(cond, mutex);
    return cond_wait_off_cpu(cond, mutex);
}

// Wakes the coexec threads that wait on `cond` as paused tasks (CondWaiters)
// first; only when there is none does a thread in the real condvar get the
// signal. Either way at least one waiter wakes, as POSIX asks.
COEXEC_POCL_EXPORT int pthread_cond_signal(pthread_cond_t* cond) {
    if (CondWaiters::instance().wake(cond, /*all=*/false) > 0) return 0;
    return real_pthread().cond_signal(cond);
}

COEXEC_POCL_EXPORT int pthread_cond_broadcast(pthread_cond_t* cond) {
    CondWaiters::instance().wake(cond, /*all=*/true);
    return real_pthread().cond_broadcast(cond);
}

// The timed variant of the waits above (libpocl.so uses it for events).
COEXEC_POCL_EXPORT int pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                              const struct timespec* deadline) {
    if (!wait_needs_release(COEXEC_POCL_CALLER()))
        return real_pthread().cond_timedwait(cond, mutex, deadline);
    return cond_timedwait_off_cpu(cond, mutex, deadline);
}

// PoCL's start-up barrier: the host waits for every worker, and the workers
// need CPUs to get there.
COEXEC_POCL_EXPORT int pthread_barrier_wait(pthread_barrier_t* barrier) {
    if (!wait_needs_release(COEXEC_POCL_CALLER())) return real_pthread().barrier_wait(barrier);
    CpuRelease release;
    return real_pthread().barrier_wait(barrier);
}
