// Threads to wake once the segment lock is released (waking under the lock
// would make the woken thread contend for it at once).
#pragma once

#include "shm/futex.hpp"
#include "shm/layout.hpp"

#include <array>
#include <cassert>

namespace coexec::scheduler {

class WakeList {
  public:
    // A locked section grants each CPU about once: room for every grant on
    // nodes up to 256 CPUs. Past that, flush() wakes by a scan.
    static constexpr size_t kCapacity = 264;

    // One wake per grant to a thread that sleeps (ThreadWord::move() says
    // which). A locked section grants each CPU about once, but
    // a reap of many dead processes can grant a CPU once per process, so
    // the list may fill: then flush() wakes every thread with a grant not
    // yet taken, which covers the ones that did not fit. (No allocation:
    // grants are also made from the preemption signal handler.)
    void add(int32_t thread) {
        if (count_ < items_.size())
            items_[count_++] = thread;
        else
            overflow_ = true;
    }
    // Wakes every listed thread of `segment` but `self` (the caller, which
    // looks at its grant without sleeping) and empties the list.
    void flush(shm::Segment& segment, int32_t self = shm::kNone) {
        for (size_t i = 0; i < count_; ++i)
            if (items_[i] != self) shm::futex_wake(segment.threads[items_[i]].word);
        count_ = 0;
        if (overflow_) wake_granted(segment, self);
        overflow_ = false;
    }
    bool empty() const { return count_ == 0 && !overflow_; }

  private:
    // Relaxed: a grant is published before its word moves (release), and a
    // spurious wake only makes a waiter look at its word again. Every slot
    // is looked at (threads_used is read under the lock only).
    static void wake_granted(shm::Segment& segment, int32_t self) {
        for (int32_t t = 0; t < shm::kMaxThreads; ++t) {
            shm::ThreadSlot& th = segment.threads[t];
            if (t != self && th.state.load(std::memory_order_relaxed) != shm::ThreadState::Unused &&
                th.grant.load(std::memory_order_relaxed) != shm::kNone)
                shm::futex_wake(th.word);
        }
    }

    std::array<int32_t, kCapacity> items_;
    size_t count_ = 0;
    bool overflow_ = false;
};

} // namespace coexec::scheduler
