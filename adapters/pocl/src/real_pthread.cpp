#include "real_pthread.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace coexec::pocl {
namespace {

// Tries each version in turn: a glibc older than 2.34 has the thread calls only
// at GLIBC_2.2.5, and dlvsym never falls back on its own.
template <typename Fn>
Fn resolve(const char* name, const char* version, const char* fallback_version) {
    void* sym = dlvsym(RTLD_NEXT, name, version);
    if (sym == nullptr && fallback_version != nullptr)
        sym = dlvsym(RTLD_NEXT, name, fallback_version);
    if (sym == nullptr) {
        std::fprintf(stderr, "coexec-pocl: cannot resolve %s@%s in glibc\n", name, version);
        std::abort();
    }
    return reinterpret_cast<Fn>(sym);
}

RealPthread load() {
    RealPthread r;
    r.create = resolve<RealPthread::CreateFn>("pthread_create", "GLIBC_2.34", "GLIBC_2.2.5");
    r.join = resolve<RealPthread::JoinFn>("pthread_join", "GLIBC_2.34", "GLIBC_2.2.5");
    r.cond_wait = resolve<RealPthread::CondWaitFn>("pthread_cond_wait", "GLIBC_2.3.2", nullptr);
    r.cond_timedwait =
        resolve<RealPthread::CondTimedWaitFn>("pthread_cond_timedwait", "GLIBC_2.3.2", nullptr);
    r.cond_signal = resolve<RealPthread::CondWakeFn>("pthread_cond_signal", "GLIBC_2.3.2", nullptr);
    r.cond_broadcast =
        resolve<RealPthread::CondWakeFn>("pthread_cond_broadcast", "GLIBC_2.3.2", nullptr);
    r.barrier_wait =
        resolve<RealPthread::BarrierWaitFn>("pthread_barrier_wait", "GLIBC_2.34", "GLIBC_2.2.5");
    return r;
}

} // namespace

const RealPthread& real_pthread() {
    static const RealPthread real = load();
    return real;
}

} // namespace coexec::pocl
