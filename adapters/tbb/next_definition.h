// The definition of a symbol that this library interposes, from the next
// object in the lookup order (libc's, libtbb's, or another preloaded
// adapter's).
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

namespace coexec::tbb_rml {

// The next definition of `name`, cached in `cache`. The program called the
// interposed function, so its library is loaded: a missing definition is a
// broken installation, reported on stderr before abort().
template <typename Fn>
Fn next_definition(std::atomic<Fn>& cache, const char* name) {
    // Racing first calls store the same address, so relaxed order suffices.
    Fn fn = cache.load(std::memory_order_relaxed);
    if (fn == nullptr) {
        fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
        if (fn == nullptr) {
            std::fprintf(stderr, "coexec tbb: no definition of %s after libirml.so.1\n", name);
            std::abort();
        }
        cache.store(fn, std::memory_order_relaxed);
    }
    return fn;
}

} // namespace coexec::tbb_rml
