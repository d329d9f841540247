// coexec's own code on a thread's stack: the preemption signal and the
// wrappers of libcoexec-host.so leave such a scope alone.
#pragma once

#include <atomic>

namespace coexec::core {

// How deep the calling thread is inside coexec's own code. The preemption
// signal acts only at depth 0, in user code, where the thread holds none of
// coexec's locks and its context is consistent.
int& runtime_depth();

// Marks a scope of coexec's own code (every C API entry, a worker between
// tasks): a preemption signal arriving inside it is ignored.
class RuntimeSection {
  public:
    RuntimeSection() {
        ++runtime_depth();
        // Only the thread itself and its signal handler look at the depth:
        // a compiler barrier orders it with the scope's body.
        std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    ~RuntimeSection() {
        std::atomic_signal_fence(std::memory_order_seq_cst);
        --runtime_depth();
    }
    RuntimeSection(const RuntimeSection&) = delete;
    RuntimeSection& operator=(const RuntimeSection&) = delete;
};

} // namespace coexec::core
