// The next definition of a libc function that libcoexec also defines (the
// affinity calls, pthread_create): libc's, or a later interposer's.
#pragma once

#include <atomic>
#include <dlfcn.h>

namespace coexec::core {

// `name`'s next definition after libcoexec, looked up on first use and kept
// in `cache`; nullptr when there is none. Racing first calls store the same
// address, so relaxed order suffices: the pointer is the only data
// published.
template <typename Fn>
Fn next_definition(std::atomic<Fn>& cache, const char* name) {
    Fn fn = cache.load(std::memory_order_relaxed);
    if (fn == nullptr) {
        fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
        cache.store(fn, std::memory_order_relaxed);
    }
    return fn;
}

} // namespace coexec::core
