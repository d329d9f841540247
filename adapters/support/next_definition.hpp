// The definition of a function an adapter interposes, from the next object
// in the lookup order (libc's, the runtime's, or another preloaded
// adapter's). Header-only and free of the C++ runtime: the OpenMP shim,
// linked into libomp, uses it too.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

namespace coexec::adapter {

// `name`'s next definition, looked up on first use and kept in `cache`;
// nullptr when there is none. Racing first calls store the same address,
// so relaxed order suffices: the pointer is the only data published.
template <typename Fn>
Fn next_definition(std::atomic<Fn>& cache, const char* name) {
    Fn fn = cache.load(std::memory_order_relaxed);
    if (fn == nullptr) {
        fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
        cache.store(fn, std::memory_order_relaxed);
    }
    return fn;
}

// Reports a definition that must exist and does not (a broken installation:
// the program called the interposed function, so its library is loaded),
// naming `adapter`, then aborts.
[[noreturn]] inline void missing_definition(const char* adapter, const char* name,
                                            const char* version) {
    std::fprintf(stderr, "coexec %s: no definition of %s%s%s after this library\n", adapter, name,
                 version ? "@" : "", version ? version : "");
    std::abort();
}

// Like next_definition(), for a function that must exist.
template <typename Fn>
Fn required_next_definition(std::atomic<Fn>& cache, const char* name, const char* adapter) {
    Fn fn = next_definition(cache, name);
    if (fn == nullptr) missing_definition(adapter, name, nullptr);
    return fn;
}

// The next definition of `name` at `version`, else at `fallback` (a glibc
// older than 2.34 has the thread calls only at GLIBC_2.2.5, and dlvsym
// never falls back on its own); it must exist.
template <typename Fn>
Fn required_versioned_definition(const char* name, const char* version, const char* fallback,
                                 const char* adapter) {
    void* sym = dlvsym(RTLD_NEXT, name, version);
    if (sym == nullptr && fallback != nullptr) sym = dlvsym(RTLD_NEXT, name, fallback);
    if (sym == nullptr) missing_definition(adapter, name, version);
    return reinterpret_cast<Fn>(sym);
}

} // namespace coexec::adapter
