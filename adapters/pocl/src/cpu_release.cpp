#include "cpu_release.hpp"

#include "pocl_modules.hpp"

#include <coexec/ext.h>
#include <nosv.h>

namespace coexec::pocl {

bool wait_needs_release(const void* caller) {
    // nosv_self() first: most waits come from threads that are not coexec
    // threads, and they must stay as cheap as the plain call.
    return nosv_self() != nullptr && is_pocl(caller_module(caller));
}

CpuRelease::CpuRelease() {
    // Already outside coexec: a CPU kept there (an OpenMP root's, between
    // regions) would otherwise stay idle until the keep's grace period ends,
    // while the workers this thread waits for queue for a CPU.
    if (!cpu_.released()) coexec_lend_kept_cpu();
}

void CpuRelease::retake_with_unlocked(pthread_mutex_t* mutex) {
    if (!cpu_.released()) return;
    pthread_mutex_unlock(mutex);
    cpu_.retake();
    pthread_mutex_lock(mutex);
}

} // namespace coexec::pocl
