// Threads to wake once the segment lock is released (waking under the lock
// would make the woken thread contend for it at once).
#pragma once

#include "shm/futex.hpp"
#include "shm/layout.hpp"

#include <array>

namespace coexec::scheduler {

class WakeList {
  public:
    void add(int32_t thread) {
        if (count_ < items_.size()) items_[count_++] = thread;
    }
    // Wakes every listed thread of `segment` but `self` (the caller, which
    // looks at its grant without sleeping) and empties the list.
    void flush(shm::Segment& segment, int32_t self = shm::kNone) {
        for (size_t i = 0; i < count_; ++i)
            if (items_[i] != self) shm::futex_wake(segment.threads[items_[i]].word);
        count_ = 0;
    }
    bool empty() const { return count_ == 0; }

  private:
    // A flush can wake at most one thread per CPU plus a few extra.
    std::array<int32_t, shm::kMaxCpus + 8> items_{};
    size_t count_ = 0;
};

} // namespace coexec::scheduler
