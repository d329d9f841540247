#include "core/cpu/idle_policy.hpp"

#include "core/cpu/cpu_handover.hpp"

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
constexpr uint64_t kSleepSliceNs = 50'000'000; // bounded sleeps, so stop is seen

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}
} // namespace

bool IdlePolicy::hold(ThreadContext& self) {
    Segment& s = member_.segment();
    auto& sched = member_.scheduler();
    const ThreadSlot& th = s.threads[self.slot];
    const auto policy = config::GovernorPolicy(s.header.config.governor_policy);
    uint64_t spins = policy == config::GovernorPolicy::Idle ? 0 : s.header.config.governor_spins;
    uint32_t seq = th.word.load(std::memory_order_acquire);
    for (;;) {
        if (int32_t g = sched.cpus().take_grant(self.slot); g != kNone) {
            binding_->bind_to(self, g);
            return true;
        }
        if (th.state.load(std::memory_order_acquire) == ThreadState::Pool ||
            stopping_.load(std::memory_order_acquire)) {
            // Evicted to the pool, or stopping: then the worker exits and
            // WorkerPool::finish() releases the CPU it may still hold.
            self.held.lost();
            return false;
        }
        uint32_t now = th.word.load(std::memory_order_acquire);
        if (now != seq) {
            seq = now;
            continue;
        }
        if (policy == config::GovernorPolicy::Busy || spins > 0) {
            if (spins > 0) --spins;
            // Submitters leave work to spinning holders (see ReadyWork::kick()). Work we
            // see but cannot place (its process has no thread to receive a
            // CPU) ends the spinning: sleeping holders are kicked instead.
            if (handover_.cpu_wanted(self) && !offer_own_cpu(self) &&
                policy != config::GovernorPolicy::Busy)
                spins = 0;
            cpu_relax();
            continue;
        }
        if (sleep_holding(self)) sched.procs().wait_word(self.slot, seq, kSleepSliceNs);
    }
}

bool IdlePolicy::sleep_holding(ThreadContext& self) {
    auto& sched = member_.scheduler();
    const CpuSlot& cpu = member_.segment().cpus[self.held.cpu];
    WakeList wakes;
    bool still_ours;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        still_ours =
            cpu.owner_thread.load(rlx) == self.slot && cpu.state.load(rlx) != CpuState::Running;
        // Work queued while we spun is offered now.
        if (still_ours &&
            sched.policy().hold_idle(self.held.cpu, /*sleeping=*/true, wakes) != kNone)
            still_ours = false;
    }
    wakes.flush(sched.segment(), self.slot);
    return still_ours;
}

bool IdlePolicy::offer_own_cpu(ThreadContext& self) {
    auto& sched = member_.scheduler();
    const CpuSlot& cpu = member_.segment().cpus[self.held.cpu];
    WakeList wakes;
    bool placed = true; // granted or evicted meanwhile: the caller's loop sees which
    {
        scheduler::SchedulerLock lock(sched, wakes);
        if (cpu.owner_thread.load(rlx) == self.slot && cpu.state.load(rlx) == CpuState::Idle)
            placed =
                sched.policy().offer(self.held.cpu, wakes) != kNone; // to us, or to another process
    }
    wakes.flush(sched.segment(), self.slot);
    return placed;
}

} // namespace coexec::core
