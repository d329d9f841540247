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

CpuRelease::CpuRelease() : released_(coexec_block_enter() == NOSV_SUCCESS) {
    // Already outside coexec: a CPU kept there (an OpenMP root's, between
    // regions) would otherwise stay idle until the keep's grace period ends,
    // while the workers this thread waits for queue for a CPU.
    if (!released_) coexec_lend_kept_cpu();
}

CpuRelease::~CpuRelease() {
    retake();
}

void CpuRelease::retake_with_unlocked(pthread_mutex_t* mutex) {
    if (!released_) return;
    pthread_mutex_unlock(mutex);
    retake();
    pthread_mutex_lock(mutex);
}

void CpuRelease::retake() {
    if (!released_) return;
    released_ = false;
    coexec_block_exit();
}

} // namespace coexec::pocl
