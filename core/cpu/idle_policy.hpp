// What a worker does with a CPU it holds but has no work for: it spins a
// while, looking for work of any process, then sleeps on its word until
// work arrives or the CPU is taken away (the governor policy).
#pragma once

#include "core/runtime/thread_context.hpp"

namespace coexec::core {

class Runtime;

class IdlePolicy {
  public:
    explicit IdlePolicy(Runtime& rt) : rt_(rt) {}

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

    Runtime& rt_;
};

} // namespace coexec::core
