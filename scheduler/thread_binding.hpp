// The kernel affinity of the segment's threads: which CPU each one is bound
// to (ThreadSlot::bound_cpu), and the binding itself, through the raw
// system call (kernel_affinity.hpp). The only writer of bound_cpu after a
// thread slot is handed out. Lock-free: a thread binds itself, or whoever
// grants it a CPU while it waits binds it (under the segment lock).
#pragma once

#include "shm/layout.hpp"

#include <cstdint>

namespace coexec::scheduler {

class ThreadBinding {
  public:
    explicit ThreadBinding(shm::Segment& segment) : s_(segment) {}

    // Sets the kernel affinity of `thread` to `cpu`, unless it is bound
    // there already. Only by the thread itself, or by whoever grants it
    // `cpu` while it waits. A thread the kernel refuses (another user's) is
    // left to bind itself, and so is one that keeps its affinity while
    // coexec has not pinned it (note()).
    void bind(int32_t thread, int32_t cpu);
    // Lets `thread` run on every managed CPU (an evicted lender).
    void unbind(int32_t thread);
    // A thread that keeps its affinity pinned itself to `cpu`: until it
    // forgets the binding, granters move it as they move other threads.
    void note(int32_t thread, int32_t cpu);
    // The thread changed its own affinity: the next bind() sets it.
    void forget(int32_t thread);
    // The CPU `thread`'s kernel affinity names, or kNone.
    int32_t bound_cpu(int32_t thread) const;

  private:
    shm::Segment& s_;
};

} // namespace coexec::scheduler
