#include "real_pthread.hpp"

#include "support/next_definition.hpp"

namespace coexec::pocl {
namespace {

template <typename Fn>
Fn resolve(const char* name, const char* version, const char* fallback_version) {
    return adapter::required_versioned_definition<Fn>(name, version, fallback_version, "pocl");
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
