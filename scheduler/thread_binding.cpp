#include "scheduler/thread_binding.hpp"

#include "scheduler/kernel_affinity.hpp"

#include <sched.h>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

void ThreadBinding::bind(int32_t t, int32_t c) {
    ThreadSlot& th = s_.threads[t];
    // tid 0 (a worker not started yet) would name the caller itself.
    const pid_t tid = th.tid.load(rlx);
    const int32_t bound = th.bound_cpu.load(rlx);
    if (bound == c || tid <= 0) return;
    // A thread that keeps its affinity is ours to move only while coexec
    // pins it (note()); otherwise its mask is its own.
    if (th.keeps_affinity && bound == kNone) return;
    // Granters bind before they publish the grant: binding a waiting thread
    // is cheap, and the kernel then wakes it on the granted CPU. A thread
    // that binds itself after waking first runs on its previous CPU
    // (delaying that CPU's holder) and then migrates.
    CpuMask one;
    th.bound_cpu.store(one.set(s_.cpus[c].system_id) && one.apply(tid) == 0 ? c : kNone, rlx);
}

void ThreadBinding::unbind(int32_t t) {
    ThreadSlot& th = s_.threads[t];
    const pid_t tid = th.tid.load(rlx);
    if (tid <= 0 || th.keeps_affinity) return;
    CpuMask managed;
    for (int32_t c = 0; c < s_.header.cpu_count; ++c)
        managed.set(s_.cpus[c].system_id);
    managed.apply(tid);
    th.bound_cpu.store(kNone, rlx);
}

void ThreadBinding::note(int32_t t, int32_t c) {
    s_.threads[t].bound_cpu.store(c, rlx);
}

void ThreadBinding::forget(int32_t t) {
    s_.threads[t].bound_cpu.store(kNone, rlx);
}

int32_t ThreadBinding::bound_cpu(int32_t t) const {
    return s_.threads[t].bound_cpu.load(rlx);
}

} // namespace coexec::scheduler
