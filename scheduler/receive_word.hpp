// The word through which a thread waiting for a CPU for its own task may
// take one straight from a granter (another process, or its own giving up a
// CPU), past its own process's pool.
#pragma once

#include <cstdint>

namespace coexec::scheduler {

// ThreadSlot::receive, decoded. Three states:
// - Closed: no direct grant (the task is not queued, or was not offered);
// - Open: the task is queued as its process's only ready item, and a CPU the
//   placement allows (any CPU, or one) may be granted to the thread directly;
// - Claimed: a granter did so; the task is still queued.
// The thread's process opens the word under its queue lock, after queueing
// the task. A granter moves Open -> Claimed by compare-exchange against the
// process popping the task, which exchanges the word for Closed: exactly one
// of them gives the thread a CPU. A popper that finds Claimed drops the task
// (its thread runs it already); a thread that wakes to Claimed takes its
// task out of the queue itself, unless a popper dropped it first.
class ReceiveWord {
  public:
    static constexpr uint32_t kClosed = 0, kClaimed = 1;

    constexpr explicit ReceiveWord(uint32_t bits) : bits_(bits) {}
    // Open for `cpu`, or for any CPU when `cpu` < 0.
    static constexpr ReceiveWord open_for(int32_t cpu) {
        return ReceiveWord(cpu < 0 ? kAny : kFirstCpu + uint32_t(cpu));
    }

    constexpr uint32_t bits() const { return bits_; }
    constexpr bool open() const { return bits_ >= kAny; }
    constexpr bool claimed() const { return bits_ == kClaimed; }
    // Whether an open word lets the thread run on `cpu`.
    constexpr bool allows(int32_t cpu) const {
        return bits_ == kAny || (bits_ >= kFirstCpu && bits_ - kFirstCpu == uint32_t(cpu));
    }

  private:
    static constexpr uint32_t kAny = 2, kFirstCpu = 3;
    uint32_t bits_;
};

static_assert(ReceiveWord::open_for(-1).allows(7) && ReceiveWord::open_for(2).allows(2));
static_assert(!ReceiveWord::open_for(2).allows(1) && !ReceiveWord(ReceiveWord::kClaimed).open());

} // namespace coexec::scheduler
