// What a worker does with a CPU it holds but has no work for: it spins a
// while, looking for work of any process, then sleeps on its word until
// work arrives or the CPU is taken away (the governor policy).
#pragma once

#include "core/cpu/cpu_binding.hpp"
#include "core/runtime/membership.hpp"
#include "core/runtime/thread_context.hpp"

#include <atomic>
#include <optional>

namespace coexec::core {

class CpuHandover;

class IdlePolicy {
  public:
    // `handover` says whether work waits for the CPU; `binding` binds the
    // holder when work arrives; `stopping` ends the hold.
    IdlePolicy(const Membership& member, const CpuHandover& handover,
               std::optional<CpuBinding>& binding, const std::atomic<bool>& stopping)
        : member_(member), handover_(handover), binding_(binding), stopping_(stopping) {}

    // Holds the caller's CPU idle. True when work arrived for the caller
    // (it holds its CPU, bound, and runs); false when the CPU was taken
    // away and the caller is back in the pool, or the runtime stops.
    bool hold(ThreadContext& self);

  private:
    // A spinning holder that saw work offers its CPU (possibly to itself)
    // under the lock; false if nobody could take it.
    bool offer_own_cpu(ThreadContext& self);
    // The holder stops spinning: marks its CPU Sleeping and offers it to
    // work queued meanwhile. True if it still holds the CPU and may sleep.
    bool sleep_holding(ThreadContext& self);

    const Membership& member_;
    const CpuHandover& handover_;
    std::optional<CpuBinding>& binding_;
    const std::atomic<bool>& stopping_;
};

} // namespace coexec::core
